import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { routes } from '#functions/routes.ts';
import { type RunningHttpGateway, startHttpGateway } from '#infra/local/http-gateway.ts';
import { loadWebSite } from '#infra/local/web-site.ts';
import { useApi } from '#test/support/api.ts';
import { chromiumFound, chromiumPath, launchChromium } from '#tools/chromium.ts';

/**
 * Whether the browser tests can run. Without Chromium they are skipped, saying so, except under CI, where a
 * missing browser fails the run (.ci/run installs Debian's chromium).
 */
export function browserAvailable(): boolean {
  if (chromiumFound()) return true;
  const message = `No Chromium at ${chromiumPath()} (set CHROMIUM_PATH, or: apt-get install chromium)`;
  if (process.env.CI) throw new Error(`${message}: the viewer's browser tests cannot run in CI without it`);
  console.warn(`\n  SKIPPED: the audit viewer's browser tests. ${message}.\n`);
  return false;
}

export interface Viewer {
  readonly api: ReturnType<typeof useApi>['api'];
  readonly db: ReturnType<typeof useApi>['db'];
  /** The local server with the viewer at / and the API under /api/v1, as `npm start` serves them. */
  readonly url: string;
  /** A page in a fresh browser context (its own session storage), local time in Asia/Kolkata (UTC+05:30). */
  open(
    path: string,
    options?: { width?: number; height?: number; prepare?: (page: Page) => Promise<unknown> },
  ): Promise<Page>;
}

/**
 * The viewer as `npm start` serves it, bundled from web/ once per process: the files of the shared project that run
 * in one process serve the same build (the gateway only reads it).
 */
let site: ReturnType<typeof loadWebSite> | undefined;
const builtSite = () => {
  // A build that failed is not kept: the next file builds again.
  site ??= loadWebSite().catch((error: unknown) => {
    site = undefined;
    throw error;
  });
  return site;
};

/** Registers the hooks of a browser test file: a cloned database, the local server with the viewer, one Chromium. */
export function useViewer(): Viewer {
  const t = useApi();
  let gateway: RunningHttpGateway | undefined;
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    [gateway, browser] = await Promise.all([
      builtSite().then((files) => startHttpGateway({ port: 0, host: '127.0.0.1', routes, site: files })),
      launchChromium(),
    ]);
  });
  afterAll(async () => {
    await Promise.all(contexts.map((context) => context.close()));
    await browser?.close();
    await gateway?.close();
  });
  return {
    get api() {
      return t.api;
    },
    get db() {
      return t.db;
    },
    get url() {
      return gateway!.url;
    },
    async open(path, options = {}) {
      const context = await browser!.newContext({
        locale: 'en-GB',
        timezoneId: 'Asia/Kolkata',
        viewport: { width: options.width ?? 1280, height: options.height ?? 900 },
        // Local HTTPS stand-ins (an authorization server) have self-signed certificates.
        ignoreHTTPSErrors: true,
      });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(5_000);
      await options.prepare?.(page);
      await page.goto(`${gateway!.url}${path}`);
      return page;
    },
  };
}
