/**
 * The web pages as the local server serves them (the audit viewer at / too; docs/web.md): built once
 * at start into memory by the same buildWeb toolchain as the deployment, no config.json (pages then call their own
 * origin). Pages keep their view in the query string: paths other than the pages and their assets are 404.
 */
import { bundleWeb } from '../../web/build.ts';
import type { StaticFile } from './http-gateway.ts';

const pageHeaders = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // frame-ancestors cannot be set by the page's own meta policy.
  'content-security-policy': "frame-ancestors 'none'",
};

export async function loadWebSite(): Promise<Map<string, StaticFile>> {
  const site = new Map<string, StaticFile>();
  for (const file of await bundleWeb()) {
    const served: StaticFile = {
      body: file.body,
      headers: {
        ...pageHeaders,
        'content-type': file.contentType,
        'cache-control': file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      },
    };
    site.set(`/${file.path}`, served);
    if (file.path === 'index.html') site.set('/', served);
  }
  return site;
}
