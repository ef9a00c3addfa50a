/**
 * The web pages as a static site: one HTML file per page (`sitePages`) and content-hashed assets (each page's
 * script assets/<entry>-<hash>.js, the code pages share in assets/chunk-<hash>.js, assets/styles-<hash>.css), bundled
 * and minified by esbuild. Nothing depends on where it is served: a page reads the API's address from a config.json
 * beside it, which the deployment writes (same origin without one).
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

const shell = 'shell-page.html';

/**
 * Each page: the HTML it is written as and its script's entry point. Its HTML comes from web/ (`source`): its own
 * file, or the shell every page drawn by its script shares (`shell-page.html`, which names %PAGE% and %page%, the
 * page's name as a title and in a sentence). Both name %SCRIPT% and %STYLESHEET%.
 */
export const sitePages: readonly { html: string; entry: string; script: string; source: string; name?: string }[] = [
  { html: 'index.html', entry: 'app', script: 'src/main.ts', source: 'index.html' },
  {
    html: 'custom-fields-import.html',
    entry: 'import',
    script: 'src/custom-fields-import/main.ts',
    source: 'custom-fields-import.html',
  },
  { html: 'migration.html', entry: 'migration', script: 'src/migration/main.ts', source: shell, name: 'Migration' },
  { html: 'invoices.html', entry: 'invoices', script: 'src/invoices/main.ts', source: shell, name: 'Invoices' },
  { html: 'devices.html', entry: 'devices', script: 'src/devices/main.ts', source: shell, name: 'Devices' },
  { html: 'alerts.html', entry: 'alerts', script: 'src/alerts/main.ts', source: shell, name: 'Alerts' },
  {
    html: 'automations.html',
    entry: 'automations',
    script: 'src/automations/main.ts',
    source: shell,
    name: 'Automations',
  },
  { html: 'streaming.html', entry: 'streaming', script: 'src/streaming/main.ts', source: shell, name: 'Streaming' },
  { html: 'patching.html', entry: 'patching', script: 'src/patching/main.ts', source: shell, name: 'Patching' },
];

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
    entryPoints: {
      ...Object.fromEntries(sitePages.map((page) => [page.entry, page.script])),
      styles: 'src/styles.css',
    },
    entryNames: 'assets/[name]-[hash]',
    chunkNames: 'assets/chunk-[hash]',
    splitting: true,
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
  const asset = (prefix: string, extension: string) => {
    const found = assets.find((file) => file.path.startsWith(`assets/${prefix}-`) && file.path.endsWith(extension));
    if (!found) throw new Error(`esbuild wrote no ${prefix} ${extension} file`);
    return found.path;
  };
  const pages = await Promise.all(
    sitePages.map(async (page) => {
      const html = (await readFile(join(webDir, page.source), 'utf8'))
        .replaceAll('%PAGE%', page.name ?? '')
        .replaceAll('%page%', page.name?.toLowerCase() ?? '')
        .replace('%SCRIPT%', asset(page.entry, '.js'))
        .replace('%STYLESHEET%', asset('styles', '.css'))
        .replace(/>\s+</g, '><');
      return {
        path: page.html,
        contentType: contentTypeOf(page.html),
        body: new TextEncoder().encode(html),
        immutable: false,
      };
    }),
  );
  return [...pages, ...assets];
}

/**
 * Writes the complete static site into outDir: the pages and assets/ (the previous assets/ is replaced, so old
 * hashed files do not linger). No config.json: whoever deploys the site writes one beside the pages.
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
  console.log(`web pages written to ${outDir}`);
}
