import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '#infra/local/self-signed-certificate.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';
import { seriousViolations } from './support/axe.ts';
import { browserAvailable, useViewer } from './support/viewer.ts';

/**
 * A local authorization server in the shape of a Cognito user pool's hosted page: /oauth2/authorize answers at once
 * with a code for the one user it knows, /oauth2/token gives the ID token for a code only with the verifier whose
 * S256 challenge came with it (RFC 7636), once, and answers CORS as the pool's token endpoint does.
 */
async function startAuthorizationServer(idToken: () => string) {
  const codes = new Map<string, { challenge: string; redirectUri: string; clientId: string }>();
  const authorizations: URLSearchParams[] = [];
  const exchanges: URLSearchParams[] = [];
  // HTTPS, as the pool's domain is: the pages' own policy lets them call no plain-HTTP address but their origin.
  const server: Server = createServer(selfSignedCertificate(), (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const cors = { 'access-control-allow-origin': req.headers.origin ?? '*' };
    if (url.pathname === '/oauth2/authorize') {
      authorizations.push(url.searchParams);
      const code = randomUUID();
      codes.set(code, {
        challenge: url.searchParams.get('code_challenge') ?? '',
        redirectUri: url.searchParams.get('redirect_uri') ?? '',
        clientId: url.searchParams.get('client_id') ?? '',
      });
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.search = new URLSearchParams({ code, state: url.searchParams.get('state') ?? '' }).toString();
      res.writeHead(302, { location: back.href }).end();
      return;
    }
    if (url.pathname === '/oauth2/token' && req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-headers': 'content-type' }).end();
      return;
    }
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      exchanges.push(form);
      const issued = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verified =
        issued &&
        form.get('grant_type') === 'authorization_code' &&
        form.get('client_id') === issued.clientId &&
        form.get('redirect_uri') === issued.redirectUri &&
        createHash('sha256')
          .update(form.get('code_verifier') ?? '')
          .digest('base64url') === issued.challenge;
      const reply = verified ? { id_token: idToken(), token_type: 'Bearer' } : { error: 'invalid_grant' };
      res.writeHead(verified ? 200 : 400, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, authorizations, exchanges, close: () => server.close() };
}

describe.skipIf(!browserAvailable())("signing in through the user pool's hosted page", () => {
  const site = useViewer();
  let tenant: Tenant;
  let pool: Awaited<ReturnType<typeof startAuthorizationServer>>;

  beforeAll(async () => {
    tenant = await createTenant(site.api, 'Pooled');
    pool = await startAuthorizationServer(() => tenant.partnerToken);
  });
  afterAll(() => pool?.close());

  /** The page with config.json naming the hosted sign-in, as the stack writes it with identity: "cognito". */
  const open = (path: string, viewport = { width: 1440, height: 900 }) =>
    site.open(path, {
      ...viewport,
      prepare: (page: Page) =>
        page.route('**/config.json', (route) =>
          route.fulfill({
            contentType: 'application/json',
            body: JSON.stringify({
              apiBaseUrl: site.url,
              signIn: {
                authorizeUrl: `${pool.base}/oauth2/authorize`,
                tokenUrl: `${pool.base}/oauth2/token`,
                clientId: 'web-client',
              },
            }),
          }),
        ),
    });

  it('offers the hosted page and comes back signed in on the page it left, by a code and its PKCE verifier', async () => {
    const page = await open('/devices.html');
    const button = page.getByRole('button', { name: 'Sign in with your account' });
    await button.waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await button.click();
    await page.waitForURL(/\/devices\.html$/);
    await page
      .locator('#account')
      .filter({ hasText: /Sign out/ })
      .waitFor();
    const asked = pool.authorizations.at(-1)!;
    expect(Object.fromEntries(asked)).toMatchObject({
      response_type: 'code',
      client_id: 'web-client',
      redirect_uri: `${site.url}/`,
      code_challenge_method: 'S256',
    });
    expect(asked.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(pool.exchanges.at(-1)!.get('code_verifier')).toMatch(/^[\w-]{43}$/);
    // Nothing of the exchange stays in the address.
    expect(new URL(page.url()).searchParams.has('code')).toBe(false);
    expect(new URL(page.url()).searchParams.has('state')).toBe(false);
  });

  it('starts at once from the stack’s sign-in link, and refuses an answer this tab did not ask for', async () => {
    const page = await open('/?sign-in', { width: 390, height: 844 });
    await page
      .locator('#account')
      .filter({ hasText: /Sign out/ })
      .waitFor();
    expect(new URL(page.url()).search).toBe('');

    const stranger = await open(`/devices.html?code=${randomUUID()}&state=forged`);
    await stranger.getByRole('alert').filter({ hasText: 'This sign-in was not started in this tab' }).waitFor();
    expect(new URL(stranger.url()).search).toBe('');
  });
});
