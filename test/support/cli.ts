import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';

/** How the local gateways load a handler: by its path under functions/, on the first request it answers. */
const handlerImport = `import(new URL(\`../../functions/\${handlerPath}.ts\`, import.meta.url).href)`;

/**
 * Each module keeps its own import.meta.url in the bundle, so a file it reads beside itself (the migrations, a
 * fixture) is the one in the source tree. The local gateways' handler import becomes one esbuild resolves: every
 * handler is in the bundle, still loaded on the first request it answers, and shares the bundle's modules.
 */
const sourceTree: Plugin = {
  name: 'source-tree',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.ts$/ }, (args) => {
      let contents = readFileSync(args.path, 'utf8');
      if (/\/infra\/local\/(http|ws)-gateway\.ts$/.test(args.path)) {
        if (!contents.includes(handlerImport))
          throw new Error(`${args.path} no longer loads handlers as ${handlerImport}`);
        contents = contents.replace(handlerImport, `import(\`../../functions/\${handlerPath}.ts\`)`);
      }
      return {
        contents: contents.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: 'ts',
      };
    });
  },
};

/**
 * A command-line entry point (tools/*.ts, demo/agent/main.ts, infra/local/main.ts) bundled once into a plain ES
 * module, so that each run is a bare `node` process: what `tsx` would otherwise compile again on every start. Its
 * packages stay in node_modules, loaded as `tsx` loads them. The bundle lives under .data/ (inside the project, where
 * node_modules resolves).
 */
export async function bundleCli(entry: string, dir: string): Promise<string> {
  const outfile = resolve(dir, `${basename(entry, '.ts')}.mjs`);
  await build({
    entryPoints: [resolve(entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    logLevel: 'error',
    plugins: [sourceTree],
  });
  return outfile;
}

export interface Cli {
  /** The bundle's path. */
  readonly path: string;
  /** Node's arguments that run the command with these arguments, as `--import tsx <entry> ...args` would. */
  args(args: string[]): string[];
}

/** Registers the hooks of a test file that runs `entry` as a command: bundled before all, removed after all. */
export function useCli(entry: string): Cli {
  let dir: string | undefined;
  let path: string | undefined;
  beforeAll(async () => {
    mkdirSync('.data', { recursive: true });
    dir = mkdtempSync(resolve('.data', 'test-cli-'));
    path = await bundleCli(entry, dir);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get path() {
      if (!path) throw new Error(`${entry} is bundled in beforeAll`);
      return path;
    },
    args(args) {
      return ['--enable-source-maps', this.path, ...args];
    },
  };
}
