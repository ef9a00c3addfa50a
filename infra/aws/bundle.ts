/**
 * Bundles a Lambda with esbuild (no Docker), as a script because esbuild's plugins need its asynchronous API;
 * what is left out of the bundles and why: docs/ARCHITECTURE.md "Lambda bundles".
 */
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build, type Plugin } from 'esbuild';

export interface BundleRequest {
  entry: string;
  outdir: string;
  /** Directories copied beside the bundle: [from, name]. */
  copy?: [string, string][];
}

const leftOut: Plugin = {
  name: 'left-out',
  setup(esbuild) {
    esbuild.onResolve({ filter: /^pg$/ }, () => ({ path: 'pg', namespace: 'left-out' }));
    esbuild.onLoad({ filter: /^pg$/, namespace: 'left-out' }, () => ({
      contents:
        "export default new Proxy({}, { get() { throw new Error('node-postgres is not bundled: Lambda functions reach the database through the Data API (DB_CLUSTER_ARN)'); } });",
    }));
    esbuild.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(join('node_modules', 'zod'))
        ? { path: join(args.resolveDir, args.path.replace(/index\.js$/, 'english.js')), namespace: 'zod-english' }
        : undefined,
    );
    esbuild.onResolve({ filter: /\/from-json-schema\.js$/ }, (args) =>
      args.importer.includes(join('node_modules', 'zod'))
        ? { path: 'fromJSONSchema', namespace: 'left-out' }
        : undefined,
    );
    esbuild.onLoad({ filter: /^fromJSONSchema$/, namespace: 'left-out' }, () => ({
      contents:
        "export function fromJSONSchema() { throw new Error('z.fromJSONSchema is not bundled into Lambda functions'); }",
    }));
    esbuild.onLoad({ filter: /.*/, namespace: 'zod-english' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path.replace(/english\.js$/, 'en.js'))};`,
      resolveDir: join(args.path, '..'),
    }));
  },
};

/**
 * pdfkit loads its standard fonts' metrics with a require of its own package's subpath imports at run time, which
 * no bundle can follow: the loaders become static imports of the font modules, bundled like any other.
 */
const pdfkitFonts: Plugin = {
  name: 'pdfkit-fonts',
  setup(esbuild) {
    esbuild.onLoad({ filter: /[\\/]pdfkit[\\/]js[\\/]pdfkit\.node\.mjs$/ }, (args) => {
      const fonts = new Set<string>();
      const source = readFileSync(args.path, 'utf8').replace(
        /require\$1\('#standard-fonts\/(\w+)'\)/g,
        (_, name: string) => {
          fonts.add(name);
          return `__pdfkitFont${name}`;
        },
      );
      const imports = [...fonts].map((name) => `import __pdfkitFont${name} from './standard-fonts/${name}.mjs';`);
      return { contents: `${imports.join('\n')}\n${source}`, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

export const bundleOptions = {
  bundle: true,
  // What is imported on first use (the Data API client behind shared/db/client.ts) goes into chunks loaded then,
  // not during the cold start's module initialisation.
  splitting: true,
  entryNames: 'index',
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  platform: 'node',
  format: 'esm',
  target: 'node22',
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  mainFields: ['module', 'main'],
  external: ['@aws-sdk/*', '@aws-lambda-powertools/*', 'pg-native'],
  // CommonJS dependencies still call require for Node's built-in modules.
  banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
  plugins: [leftOut, pdfkitFonts],
  logLevel: 'warning',
} as const;

/** Bundles `entry` into `outdir/index.mjs` and its chunks (+ maps), and copies the extra directories. */
export async function bundleLambda(request: BundleRequest): Promise<void> {
  mkdirSync(request.outdir, { recursive: true });
  await build({
    ...bundleOptions,
    plugins: [...bundleOptions.plugins],
    external: [...bundleOptions.external],
    mainFields: [...bundleOptions.mainFields],
    entryPoints: [request.entry],
    outdir: request.outdir,
  });
  for (const [from, name] of request.copy ?? []) cpSync(from, join(request.outdir, name), { recursive: true });
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  await bundleLambda(JSON.parse(process.argv[2]!) as BundleRequest);
}
