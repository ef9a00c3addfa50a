import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningHttpGateway, startHttpGateway } from '#infra/local/http-gateway.ts';
import { loadWebSite } from '#infra/local/web-site.ts';
import { buildWeb } from '../../web/build.ts';

describe('buildWeb(outDir): the viewer as a static site', () => {
  let outDir: string;
  beforeAll(async () => {
    outDir = await mkdtemp(join(tmpdir(), 'logbook-web-'));
    await mkdir(join(outDir, 'assets'));
    await writeFile(join(outDir, 'assets', 'app-STALE.js'), 'old');
    await buildWeb(outDir);
  });
  afterAll(() => rm(outDir, { recursive: true, force: true }));

  it('writes index.html and the content-hashed script and stylesheet it names, and nothing else', async () => {
    expect((await readdir(outDir)).sort()).toEqual(['assets', 'index.html']);
    const assets = (await readdir(join(outDir, 'assets'))).sort();
    expect(assets).toEqual([
      expect.stringMatching(/^app-[A-Z0-9]{8}\.js$/),
      expect.stringMatching(/^styles-[A-Z0-9]{8}\.css$/),
    ]);
    const html = await readFile(join(outDir, 'index.html'), 'utf8');
    expect(html).toContain(`<script type="module" src="assets/${assets[0]}"></script>`);
    expect(html).toContain(`<link rel="stylesheet" href="assets/${assets[1]}">`);
  });

  it('minifies, and bakes in no address: the page finds the API through config.json', async () => {
    const [script, stylesheet] = (await readdir(join(outDir, 'assets'))).sort();
    const js = await readFile(join(outDir, 'assets', script!), 'utf8');
    const css = await readFile(join(outDir, 'assets', stylesheet!), 'utf8');
    expect(js.split('\n').length).toBeLessThan(5);
    expect(css.split('\n').length).toBeLessThan(5);
    expect(js).toContain('config.json');
    for (const text of [js, css, await readFile(join(outDir, 'index.html'), 'utf8')])
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
