import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '#infra/local/free-port.ts';
import { useCli } from '#test/support/cli.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import {
  type DocsFailure,
  describeFailure,
  docsPages,
  printedExports,
  runPage,
  scratchCheckout,
  shellBlocks,
} from '#tools/docs-check.ts';

const readme = readFileSync('README.md', 'utf8');
const pages = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The `curl` commands of each of the README's sh blocks, each joined across its backslash-continued lines. */
function curlExamples(markdown: string): string[][] {
  const blocks: string[][] = [];
  for (const [, block] of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const commands: string[] = [];
    let current = '';
    for (const line of block!.split('\n')) {
      if (!current && !line.startsWith('curl ')) continue;
      current += line.endsWith('\\') ? `${line.slice(0, -1)} ` : line;
      if (!line.endsWith('\\')) {
        commands.push(current);
        current = '';
      }
    }
    if (commands.length > 0) blocks.push(commands);
  }
  return blocks;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');

function anchorsIn(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#+ (.*)$/.exec(line);
    if (heading) anchors.add(anchorOf(heading[1]!));
  }
  return anchors;
}

describe('the README and docs pages', () => {
  it('link only to files and headings inside the repository that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(page, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^https?:/.test(target!)) {
          broken.push(`${page}: ${target} leaves the repository`);
          continue;
        }
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path ? normalize(join(dirname(page), path)) : page;
        if (file.startsWith('..') || !existsSync(file)) broken.push(`${page}: ${target} (no file ${file})`);
        else if (anchor && file.endsWith('.md') && !anchorsIn(file).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${file})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('cite no issue, specification section or file outside the repository', () => {
    const citations = pages.flatMap((page) =>
      readFileSync(page, 'utf8')
        .split('\n')
        .filter((line) => /issue \d+|seed[- ]spec|\bseed \d|\(seed\b|DESIGN\.md|§|\.\.\/shared/i.test(line))
        .map((line) => `${page}: ${line.trim()}`),
    );
    expect(citations).toEqual([]);
  });

  it('keeps the README a short manual with both commands', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
    expect(readme).toContain('npm start');
    expect(readme).toContain('npm test');
  });
});

/** `npm start`'s entry point. */
const main = useCli('infra/local/main.ts');
let db: TestDatabase;
let server: ChildProcess | undefined;
let output = '';
const scratch = mkdtempSync(join(tmpdir(), 'readme-examples-'));

/** Resolves once the server's output holds every marker; rejects if the server exits first. */
function printed(child: ChildProcess, markers: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (markers.every((marker) => output.includes(marker))) {
        child.stdout!.off('data', check);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`npm start exited (${code}) before it was ready:\n${output}`)));
    check();
  });
}

describe("the README's curl examples", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: db.urls.admin,
      PORT: String(port),
      WS_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      NODE_ENV: 'development',
    };
    delete env.APP_DATABASE_URL;
    delete env.AUDIT_ADMIN_DATABASE_URL;
    server = spawn(process.execPath, main.args([]), {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk) => (output += chunk));
    server.stderr!.on('data', (chunk) => (output += chunk));
    // The "Try" block is printed once the API serves; the live-query examples need the demo agent's channel.
    await printed(server, ['\nTry\n', '[demo agent] connected for live queries']);
  }, 90_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGINT');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
    await db?.close();
  });

  it('each answers 2xx against npm start, run as written with the exports it prints', async () => {
    const exports = printedExports(output);
    expect(Object.keys(exports)).toEqual(
      expect.arrayContaining(['LOGBOOK_API', 'ORG_ID', 'DEVICE_ID', 'AGENT_ID', 'ORG_ADMIN_TOKEN', 'AGENT_TOKEN']),
    );
    const blocks = curlExamples(readme);
    expect(blocks.flat().length).toBeGreaterThanOrEqual(15);
    const run = (example: string, reply: string) =>
      new Promise<string>((resolve) => {
        // Only curl's own output options are added: the reply goes to a file, the status to stdout.
        const command = example.replace(/^curl /, `curl -sS -o '${reply}' -w '%{http_code}' `);
        execFile('bash', ['-c', command], { env: { ...process.env, ...exports } }, (error, stdout, stderr) =>
          resolve(error ? `${stdout} ${stderr}` : stdout),
        );
      });
    const failures: string[] = [];
    // A block's examples run in order (a field is defined before it is set); the blocks are independent.
    await Promise.all(
      blocks.map(async (examples, b) => {
        for (const [i, example] of examples.entries()) {
          const reply = join(scratch, `reply-${b}-${i}`);
          const status = await run(example, reply);
          if (!/^2\d\d$/.test(status))
            failures.push(
              `${status}: ${example}\n  ${existsSync(reply) ? readFileSync(reply, 'utf8').slice(0, 500) : ''}`,
            );
        }
      }),
    );
    expect(failures).toEqual([]);
  });

  // After the README's examples, as `npm run docs:check` runs them: the docs pages may read what the README made.
  it("every sh block of the docs pages runs as written: each page's blocks in order in one shell", async () => {
    const env = { ...process.env, ...printedExports(output) };
    const checkout = scratchCheckout();
    try {
      const pages = docsPages().filter((page) => page !== 'README.md');
      expect(pages.flatMap(shellBlocks).length).toBeGreaterThanOrEqual(100);
      const failures: DocsFailure[] = [];
      for (const page of pages) failures.push(...(await runPage(shellBlocks(page), { env, cwd: checkout })));
      expect(failures.map(describeFailure)).toEqual([]);
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  }, 240_000);
});
