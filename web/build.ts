/**
 * The audit viewer as a static site: index.html and content-hashed assets (assets/app-<hash>.js,
 * assets/styles-<hash>.css), bundled and minified by esbuild. Nothing depends on where it is served: the page
 * reads the API's address from a config.json beside index.html, which the deployment writes (same origin without one).
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const webDir = dirname(fileURLToPath(import.meta.url));

export interface WebFile {
  /** Path inside the site, without a leading slash: index.html, assets/app-<hash>.js. */
  path: string;
  contentType: string;
  body: Uint8Array;
  /** Content-hashed: may be cached for ever. index.html must be revalidated. */
  immutable: boolean;
}

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const contentTypeOf = (path: string) => contentTypes[/\.[a-z]+$/.exec(path)?.[0] ?? ''] ?? 'application/octet-stream';

/** The site's files, in memory. */
export async function bundleWeb(): Promise<WebFile[]> {
  const outdir = join(webDir, 'out');
  const result = await build({
    absWorkingDir: webDir,
    entryPoints: { app: 'src/main.ts', styles: 'src/styles.css' },
    entryNames: 'assets/[name]-[hash]',
    outdir,
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome109', 'firefox115', 'safari16'],
    legalComments: 'none',
    charset: 'utf8',
    write: false,
    logLevel: 'silent',
  });
  const assets = result.outputFiles.map((file) => ({
    path: relative(outdir, file.path).split('\\').join('/'),
    contentType: contentTypeOf(file.path),
    body: file.contents,
    immutable: true,
  }));
  const asset = (extension: string) => {
    const found = assets.find((file) => file.path.endsWith(extension));
    if (!found) throw new Error(`esbuild wrote no ${extension} file`);
    return found.path;
  };
  const html = (await readFile(join(webDir, 'index.html'), 'utf8'))
    .replace('%SCRIPT%', asset('.js'))
    .replace('%STYLESHEET%', asset('.css'))
    .replace(/>\s+</g, '><');
  return [
    {
      path: 'index.html',
      contentType: contentTypeOf('index.html'),
      body: new TextEncoder().encode(html),
      immutable: false,
    },
    ...assets,
  ];
}

/**
 * Writes the complete static site into outDir: index.html and assets/ (the previous assets/ is replaced, so old
 * hashed files do not linger). No config.json: whoever deploys the site writes one beside index.html.
 */
export async function buildWeb(outDir: string): Promise<void> {
  const files = await bundleWeb();
  await rm(join(outDir, 'assets'), { recursive: true, force: true });
  for (const file of files) {
    const target = join(outDir, file.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, file.body);
  }
}

// `npm run build:web [-- <dir>]`: the site into web/dist (or <dir>).
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = resolve(process.argv[2] ?? join(webDir, 'dist'));
  await buildWeb(outDir);
  console.log(`audit viewer written to ${outDir}`);
}
