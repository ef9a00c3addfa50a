/**
 * Sign-in through an OAuth 2.0 authorization server's hosted page (the stack's Cognito user pool): the authorization
 * code flow with PKCE (RFC 7636, S256), as OAuth's security best practice asks of a page in a browser, never the
 * implicit flow whose token travels in the address. config.json names the endpoints and the public client
 * (`signIn: { authorizeUrl, tokenUrl, clientId }`); without them the page offers the token form alone.
 *
 * Signing in leaves for the hosted page with a fresh verifier and state kept in this tab's sessionStorage; the page
 * returns to the site's root with `?code=…&state=…`, which is exchanged for the ID token at the token endpoint and
 * removed from the address, and the tab goes back to the page it started from.
 */
import { keepToken, storedToken, takeTokenFromFragment } from './session.ts';

export interface HostedSignIn {
  authorizeUrl: string;
  tokenUrl: string;
  clientId: string;
}

const pendingKey = 'logbook.signin.pending';
let offered: HostedSignIn | undefined;

/** The hosted sign-in the sign-in form offers (config.json's `signIn`), if any. */
export const hostedSignIn = (): HostedSignIn | undefined => offered;

const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

const random = (length: number) => base64url(crypto.getRandomValues(new Uint8Array(length)));

/** The address the authorization server returns to: the site's root, registered with the client. */
const returnAddress = () => new URL('./', document.baseURI).href;

/** Leaves for the hosted sign-in page, to come back to this page signed in. */
export async function startHostedSignIn(config: HostedSignIn): Promise<void> {
  const verifier = random(32);
  const state = random(16);
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  // The page to come back to, without the request to sign in (which would leave again).
  const page = new URL(location.href);
  page.searchParams.delete('sign-in');
  sessionStorage.setItem(pendingKey, JSON.stringify({ verifier, state, page: page.href }));
  const target = new URL(config.authorizeUrl);
  target.search = new URLSearchParams({
    response_type: 'code',
    client_id: config.clientId,
    redirect_uri: returnAddress(),
    scope: 'openid email profile',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(target.href);
}

/**
 * Offers `config` on the sign-in form and, when the address carries the hosted page's answer, completes the sign-in:
 * the ID token, or an Error saying why not. `?sign-in` in the address (the stack's SignInUrl) leaves for the hosted
 * page at once.
 */
export async function completeHostedSignIn(config: HostedSignIn | undefined): Promise<string | undefined> {
  offered = config;
  if (!config) return undefined;
  const query = new URLSearchParams(location.search);
  if (query.has('sign-in') && !query.has('code')) {
    await startHostedSignIn(config);
    return undefined;
  }
  const code = query.get('code');
  const failure = query.get('error_description') ?? query.get('error');
  if (!code && !failure) return undefined;
  const pending = readPending();
  history.replaceState(history.state, '', location.pathname);
  if (failure) throw new Error(`The sign-in page refused: ${failure}`);
  if (!pending || query.get('state') !== pending.state)
    throw new Error('This sign-in was not started in this tab (or was already used): sign in again');
  const reply = await fetch(config.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      client_id: config.clientId,
      code: code!,
      redirect_uri: returnAddress(),
      code_verifier: pending.verifier,
    }),
  });
  const body = (await reply.json().catch(() => ({}))) as { id_token?: unknown; error?: unknown };
  if (!reply.ok || typeof body.id_token !== 'string')
    throw new Error(`The sign-in could not be completed (${String(body.error ?? reply.status)}): sign in again`);
  const started = new URL(pending.page);
  if (started.pathname !== location.pathname) {
    // Signed in for the page the sign-in started from: it opens with the kept token.
    keepToken(body.id_token);
    location.replace(started.href);
    return undefined;
  }
  history.replaceState(history.state, '', started.href);
  return body.id_token;
}

function readPending(): { verifier: string; state: string; page: string } | undefined {
  try {
    const text = sessionStorage.getItem(pendingKey);
    sessionStorage.removeItem(pendingKey);
    return text ? (JSON.parse(text) as { verifier: string; state: string; page: string }) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The token a page starts with: a sign-in link's (#token=…), the hosted page's answer, or the one this tab kept; a
 * hosted sign-in that could not be completed is a problem to show on the sign-in form.
 */
export async function startingToken(config: HostedSignIn | undefined): Promise<{ token?: string; problem?: string }> {
  try {
    const token = takeTokenFromFragment() ?? (await completeHostedSignIn(config)) ?? storedToken();
    return token ? { token } : {};
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}
