/**
 * `npm run docs:check`: runs every ```sh block of README.md and docs/*.md, as written, with bash, against a started
 * server, and reports each command that failed: a curl answering other than 2xx, or a command exiting non-zero.
 *
 * The server: the one whose exports (`LOGBOOK_API`, `ORG_ID`, the tokens… exactly what `npm start` prints) are in
 * the environment; else a fresh `npm start` of its own, on an empty `.data/` in a scratch copy of the checkout and
 * on free ports, stopped at the end. A page's blocks run in page order in one bash session (what a reader going
 * down the page does), pages one after another: README.md first, then docs/*.md by name. Blocks fenced otherwise
 * (```console: deploys, installs, commands that start servers or need AWS, synopses with placeholders) are not run.
 * Exit status: 0 every block passed, 1 some failed, 2 a usage error, a missing tool or a server that did not start.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from '#infra/local/free-port.ts';
import { runCommand, usageError } from './cli.ts';

/** One ```sh block of a page: its number on the page (from 1), the line of its first command, its text. */
export interface ShellBlock {
  page: string;
  block: number;
  line: number;
  text: string;
}

/** A command that failed: where (page, block, line), what (the command or the request) and the reply or error. */
export interface DocsFailure {
  page: string;
  block: number;
  line: number;
  command: string;
  reply: string;
}

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** README.md, then docs/*.md by name: the pages whose ```sh blocks run. */
export const docsPages = (): string[] => [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The ```sh blocks of a page (only a fence whose info string is exactly `sh`; one indented in a list too). */
export function shellBlocks(page: string): ShellBlock[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  let fence: { info: string; indent: number; start: number; body: string[] } | undefined;
  for (const [i, line] of lines.entries()) {
    const marker = /^( *)```(.*)$/.exec(line);
    if (!fence) {
      if (marker) fence = { info: marker[2]!.trim(), indent: marker[1]!.length, start: i + 2, body: [] };
    } else if (marker && marker[2]!.trim() === '') {
      if (fence.info === 'sh')
        blocks.push({ page, block: blocks.length + 1, line: fence.start, text: fence.body.join('\n') });
      fence = undefined;
    } else fence.body.push(line.replace(new RegExp(`^ {0,${fence.indent}}`), ''));
  }
  return blocks;
}

/**
 * Prepended to a page's session. `curl` becomes a function that runs the real curl silently (errors still shown)
 * with the response headers kept aside, prints the reply as curl would (unless the block sends it elsewhere with
 * -o), and, on a status other than 2xx, records the request and the reply's first 300 characters and returns 22.
 * Any other command exiting non-zero is recorded by the ERR trap. Nothing the reader sees in the block changes.
 */
const prelude = String.raw`
__docs_record() { # line, command, reply
  local f
  f=$(mktemp "$__DOCS_OUT/failure.$(date +%s%N).XXXX")
  { printf '%s\n%s\n' "$1" "$2"; printf '%s' "$3" | head -c 300; } > "$f"
}
curl() {
  local a own_out=0 own_hdr='' method=GET url='' rc=0 status body hdr prev=''
  for a in "$@"; do
    case "$a" in -o|--output|--output=*|-O|--remote-name) own_out=1 ;; esac
    case "$prev" in -D|--dump-header) own_hdr=$a ;; esac
    case "$prev" in -X|--request) method=$a ;; esac
    case "$prev" in -d|--data|--data-binary|--data-raw|--json|-F|--form) [ "$method" = GET ] && method=POST ;; esac
    case "$a" in http://*|https://*) url=$a ;; esac
    prev=$a
  done
  body=$(mktemp "$__DOCS_OUT/body.XXXX")
  # The block's own -D file holds the headers when it names one; a status it cannot show is judged by exit code.
  if [ -n "$own_hdr" ]; then hdr=$own_hdr; set -- -sS "$@"; else hdr=$(mktemp "$__DOCS_OUT/headers.XXXX"); set -- -sS -D "$hdr" "$@"; fi
  if [ $own_out = 1 ]; then command curl "$@" || rc=$?
  else command curl -o "$body" "$@" || rc=$?; cat "$body"; fi
  if [ $rc -ne 0 ]; then
    __docs_record "$BASH_LINENO" "curl $method $url" "curl exited $rc"
    return $rc
  fi
  [ -f "$hdr" ] || return 0
  status=$(grep -aE '^HTTP/' "$hdr" | tail -n 1 | cut -d' ' -f2 || true)
  case "$status" in
    2??) return 0 ;;
    *) __docs_record "$BASH_LINENO" "curl $method $url: $status" "$(cat "$body")"; return 22 ;;
  esac
}
__docs_err() { # status, command, line
  case "$2" in return\ *) return 0 ;; curl\ *) [ "$1" = 22 ] && return 0 ;; npm\ *) [ "$1" = 125 ] && return 0 ;; esac
  __docs_record "$3" "$2 (exit $1)" ''
}
# A block that would reinstall, start a server or run the suite is fenced as console; this guards the checkout.
npm() {
  case "$1" in ci|install|i|start|test|t)
    __docs_record "$BASH_LINENO" "npm $1: not run (fence it as console)" ''; return 125 ;;
  esac
  command npm "$@" || { local rc=$?; __docs_record "$BASH_LINENO" "npm $* (exit $rc)" ''; return 125; }
}
trap '__docs_err $? "$BASH_COMMAND" $LINENO' ERR
`;

/**
 * Runs a page's blocks in order in one bash session with `env` (the server's exports) and working directory `cwd`;
 * resolves with the failures, each located by the page's line. A session still running after `timeoutMs` is
 * stopped and reported as such.
 */
export async function runPage(
  blocks: ShellBlock[],
  options: { env: NodeJS.ProcessEnv; cwd: string; timeoutMs?: number },
): Promise<DocsFailure[]> {
  if (blocks.length === 0) return [];
  const out = mkdtempSync(join(tmpdir(), 'docs-check-'));
  // The script's line of each block's first line, to turn a failure's script line into the page's line.
  const starts: { scriptLine: number; block: ShellBlock }[] = [];
  let script = prelude;
  for (const block of blocks) {
    script += `# ${block.page} block ${block.block}\necho ${block.block} > "$__DOCS_OUT/block"\n`;
    starts.push({ scriptLine: script.split('\n').length, block });
    script += `${block.text}\n`;
  }
  // Written once the last block ran: a block that ends the session (exit, set -e) is a failure of its own.
  script += ': > "$__DOCS_OUT/completed"\n';
  const locate = (scriptLine: number) => {
    const start = starts.findLast((s) => s.scriptLine <= scriptLine) ?? starts[0]!;
    return { block: start.block.block, line: start.block.line + scriptLine - start.scriptLine };
  };
  const page = blocks[0]!.page;
  const timeoutMs = options.timeoutMs ?? 120_000;
  try {
    const { output, timedOut } = await new Promise<{ output: string; timedOut: boolean }>((done) => {
      const child = spawn('bash', ['-c', script, `${page}`], {
        cwd: options.cwd,
        env: { ...options.env, __DOCS_OUT: out },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      }, timeoutMs);
      child.on('close', () => {
        clearTimeout(timer);
        done({ output, timedOut });
      });
    });
    if (process.env.DOCS_CHECK_VERBOSE) console.log(output);
    const failures: DocsFailure[] = readdirSync(out)
      .filter((f) => f.startsWith('failure.'))
      .sort()
      .map((f) => {
        const [line, command, ...reply] = readFileSync(join(out, f), 'utf8').split('\n');
        return { page, ...locate(Number(line)), command: command!, reply: reply.join('\n') };
      });
    if (!timedOut && !existsSync(join(out, 'completed'))) {
      const last = Number(readFileSync(join(out, 'block'), 'utf8'));
      const block = blocks.find((b) => b.block === last) ?? blocks[0]!;
      failures.push({
        page,
        block: block.block,
        line: block.line,
        command: 'the session ended in this block: the blocks after it did not run',
        reply: output.slice(-300),
      });
    }
    if (timedOut)
      failures.push({
        page,
        block: 0,
        line: 0,
        command: `the page's session still ran after ${timeoutMs / 1000} s`,
        reply: output.slice(-300),
      });
    return failures;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** A failure as the report shows it. */
export const describeFailure = (f: DocsFailure) =>
  `${f.page}:${f.line} (block ${f.block}) ${f.command}${f.reply ? `\n    ${f.reply.replaceAll('\n', '\n    ')}` : ''}`;

/** What .gitignore keeps out of the repository besides .data/: build outputs, not copied. */
const built = new Set(['cdk.out', 'dist']);

/**
 * A scratch copy of the checkout for a fresh `npm start`: the repository's files copied (its node_modules linked),
 * so npm scripts and tools run as in the checkout, while `.data/` and the files a block writes stay in the scratch
 * directory (`linked`: the checkout's own `.data/`, for a server `npm start` runs there). Readable by the embedded
 * database's user when run as root.
 */
export function scratchCheckout(data: 'empty' | 'linked' = 'empty'): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-docs-'));
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(root)) {
    if (entry === '.data' || entry === '.git' || built.has(entry)) continue;
    if (entry === 'node_modules') symlinkSync(join(root, entry), join(dir, entry));
    else cpSync(join(root, entry), join(dir, entry), { recursive: true, filter: (from) => !built.has(basename(from)) });
  }
  if (data === 'linked') {
    mkdirSync(join(root, '.data'), { recursive: true });
    symlinkSync(join(root, '.data'), join(dir, '.data'));
  }
  return dir;
}

/** The `export NAME=value` lines `npm start` printed. */
export const printedExports = (output: string): Record<string, string> =>
  Object.fromEntries([...output.matchAll(/^ {2}export (\w+)=(\S+)$/gm)].map(([, name, value]) => [name!, value!]));

/** Starts `npm start`'s entry in `cwd`; resolves with its exports once it serves and its demo agent is connected. */
async function startServer(cwd: string): Promise<{ child: ChildProcess; exports: Record<string, string> }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    WS_PORT: String(await freePort()),
    EMBEDDED_PG_PORT: String(await freePort()),
    HOST: '127.0.0.1',
  };
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/main.ts'], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (chunk) => (output += chunk));
  await new Promise<void>((ready, failed) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      if (output.includes('\nTry\n') && output.includes('[demo agent] connected for live queries')) ready();
    });
    child.once('exit', (code) => failed(new Error(`npm start exited (${code}) before it was ready:\n${output}`)));
  });
  return { child, exports: printedExports(output) };
}

const usage = `Usage:
  npm run docs:check [-- <page>...]

  Runs every sh block of README.md and docs/*.md (or of README.md and the pages named, e.g. docs/alerts.md) with
  bash against a started server and reports each failing command: page, line, block, the reply's first 300 characters.

  Server: the one whose exports (LOGBOOK_API, ORG_ADMIN_TOKEN, … as npm start prints them) are in the environment;
  else a fresh npm start of its own, on an empty .data/ in a scratch copy of the checkout, on free ports.
  Needs bash, curl and jq.

Exit status: 0 every block passed, 1 some failed, 2 usage error, a missing tool or a server that did not start.`;

async function main(): Promise<number> {
  const { positionals: named, values } = parseArgs({ options: { help: { type: 'boolean' } }, allowPositionals: true });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const unknown = named.filter((page) => !docsPages().includes(page));
  if (unknown.length > 0) return usageError(usage, `no such page: ${unknown.join(', ')}`);
  const missing = ['bash', 'curl', 'jq'].filter((tool) => spawnSync(tool, ['--version']).error);
  if (missing.length > 0) return usageError(usage, `the docs examples need ${missing.join(', ')}, not found on PATH`);
  const given = process.env.LOGBOOK_API && process.env.ORG_ADMIN_TOKEN;
  // The blocks run in a scratch copy either way, so the files they write stay out of the checkout.
  const cwd = scratchCheckout(given ? 'linked' : 'empty');
  let server: ChildProcess | undefined;
  try {
    let env: NodeJS.ProcessEnv = process.env;
    if (!given) {
      console.log(`Starting npm start on an empty .data/ in ${cwd}`);
      const started = await startServer(cwd).catch((error: unknown) => {
        console.error(error instanceof Error ? error.message : error);
        return undefined;
      });
      if (!started) return 2;
      server = started.child;
      env = { ...process.env, ...started.exports };
    } else console.log(`Against the server at ${process.env.LOGBOOK_API}`);
    const failures: DocsFailure[] = [];
    let blocks = 0;
    // Pages named on the command line run after the README; none named: every page.
    for (const page of docsPages().filter((p) => named.length === 0 || p === 'README.md' || named.includes(p))) {
      const pageBlocks = shellBlocks(page);
      blocks += pageBlocks.length;
      const found = await runPage(pageBlocks, { env, cwd });
      console.log(`${found.length === 0 ? 'ok  ' : 'FAIL'} ${page} (${pageBlocks.length} blocks)`);
      failures.push(...found);
    }
    for (const failure of failures) console.log(describeFailure(failure));
    console.log(`${blocks} blocks, ${failures.length} failed command${failures.length === 1 ? '' : 's'}`);
    return failures.length === 0 ? 0 : 1;
  } finally {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGINT');
      await exited;
    }
    rmSync(cwd, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) runCommand(main);
