import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHttpGateway, startHttpGateway } from '#infra/local/http-gateway.ts';
import { loadWebSite } from '#infra/local/web-site.ts';
import { buildWeb, sitePages } from '../../web/build.ts';

describe('buildWeb(outDir): the viewer as a static site', () => {
  let outDir: string;
  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'logbook-web-'));
    await mkdir(join(outDir, 'assets'));
    await writeFile(join(outDir, 'assets', 'app-STALE.js'), 'old');
    await buildWeb(outDir);
  });
  afterAll(() => rm(outDir, { recursive: true, force: true }));

  it('writes each page and the content-hashed scripts and stylesheet it names, and nothing else', async () => {
    expect((await readdir(outDir)).sort()).toEqual(['assets', ...sitePages.map((page) => page.html)].sort());
    const assets = await readdir(join(outDir, 'assets'));
    expect(assets).not.toContain('app-STALE.js');
    const stylesheet = assets.find((name) => /^styles-[A-Z0-9]{8}\.css$/.test(name));
    expect(stylesheet).toBeDefined();
    for (const page of sitePages) {
      const html = await readFile(join(outDir, page.html), 'utf8');
      const script = assets.find((name) => new RegExp(`^${page.entry}-[A-Z0-9]{8}\\.js$`).test(name));
      expect(script, page.entry).toBeDefined();
      expect(html).toContain(`<script type="module" src="assets/${script}"></script>`);
      expect(html).toContain(`<link rel="stylesheet" href="assets/${stylesheet}">`);
    }
    // Besides the pages' scripts and the stylesheet, only the chunks of code the pages share.
    const others = assets.filter(
      (name) => name !== stylesheet && !sitePages.some((page) => name.startsWith(`${page.entry}-`)),
    );
    for (const name of others) expect(name).toMatch(/^chunk-[A-Z0-9]{8}\.js$/);
  });

  it('minifies, and bakes in no address: the page finds the API through config.json', async () => {
    const assets = await readdir(join(outDir, 'assets'));
    const read = (name: string) => readFile(join(outDir, name), 'utf8');
    const scripts = await Promise.all(
      assets.filter((name) => name.endsWith('.js')).map((name) => read(`assets/${name}`)),
    );
    const css = await read(`assets/${assets.find((name) => name.startsWith('styles-'))}`);
    for (const script of scripts) expect(script.split('\n').length).toBeLessThan(5);
    expect(css.split('\n').length).toBeLessThan(5);
    expect(scripts.join('')).toContain('config.json');
    const pages = await Promise.all(sitePages.map((page) => read(page.html)));
    for (const text of [...scripts, css, ...pages])
      expect(text).not.toMatch(/localhost|127\.0\.0\.1|execute-api|\/work\//);
  });
});

describe('the local server serves the viewer at /', () => {
  let gateway: RunningHttpGateway;
  beforeAll(async () => {
    gateway = await startHttpGateway({
      port: 0,
      host: '127.0.0.1',
      routes: { 'GET /api/v1/health': { handler: 'health' } },
      loadHandler: async () => async () => ({
        statusCode: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"status":"ok"}',
      }),
      site: await loadWebSite(),
    });
  });
  afterAll(() => gateway.close());

  it('answers / with the page, to be revalidated, and its assets cached for good', async () => {
    const page = await fetch(`${gateway.url}/?action=login`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    const script = /src="(assets\/app-[^"]+)"/.exec(html)![1];
    const asset = await fetch(`${gateway.url}/${script}`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${gateway.url}/index.html`, { method: 'HEAD' })).headers.get('content-length')).toBe(
      String(Buffer.byteLength(html)),
    );
  });

  it('leaves API paths to the API and answers other paths 404, config.json included (same origin)', async () => {
    expect(await (await fetch(`${gateway.url}/api/v1/health`)).json()).toEqual({ status: 'ok' });
    for (const [method, path] of [
      ['GET', '/config.json'],
      ['GET', '/viewer'],
      ['GET', '/api/v1/nothing'],
      ['POST', '/'],
    ]) {
      const response = await fetch(`${gateway.url}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await response.json()).toEqual({ message: 'Not Found' });
    }
  });
});
