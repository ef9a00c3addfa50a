import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';
import { afterAll, beforeAll } from 'vitest';

/**
 * Each module keeps its own import.meta.url in the bundle, so a file it reads beside itself (the migrations, a
 * fixture) is the one in the source tree.
 */
const ownUrl: Plugin = {
  name: 'own-import-meta-url',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.ts$/ }, (args) => ({
      contents: readFileSync(args.path, 'utf8').replaceAll(
        'import.meta.url',
        JSON.stringify(pathToFileURL(args.path).href),
      ),
      loader: 'ts',
    }));
  },
};

/**
 * A command-line entry point (tools/*.ts, demo/agent/main.ts) bundled once into a plain ES module, so that each run is
 * a bare `node` process: what `tsx` would otherwise compile again on every start. Its packages stay in node_modules,
 * loaded as `tsx` loads them. The bundle lives under .data/ (inside the project, where node_modules resolves).
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
    plugins: [ownUrl],
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
