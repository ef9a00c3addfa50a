/**
 * The signed-in token. Kept in sessionStorage: it survives reloads and Back, and is gone when the tab closes.
 * `npm start` prints a link carrying the demo token in the fragment (#token=…), which never reaches a server;
 * the page takes it from there (or the #id_token=… an identity provider's implicit flow returns; the stack's own user
 * pool signs in by the code flow, ./hosted-sign-in.ts) and removes it from the address bar.
 */
const storageKey = 'logbook.viewer.token';

export function takeTokenFromFragment(): string | undefined {
  const fragment = new URLSearchParams(location.hash.slice(1));
  // id_token: what an identity provider's implicit flow returns to the page.
  const token = fragment.get('token') ?? fragment.get('id_token');
  if (!token) return undefined;
  history.replaceState(history.state, '', `${location.pathname}${location.search}`);
  return token;
}

/**
 * Signs in with a token a sign-in link brings to a tab already open on the page: following the link changes only
 * the fragment, which reloads nothing.
 */
export function signInOnFragmentToken(signIn: (token: string) => void): void {
  window.addEventListener('hashchange', () => {
    const token = takeTokenFromFragment();
    if (token) signIn(token);
  });
}

export function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(storageKey) ?? undefined;
  } catch {
    return undefined;
  }
}

export function keepToken(token: string): void {
  try {
    sessionStorage.setItem(storageKey, token);
  } catch {
    // Storage refused (private mode, quota): the token lasts until the page is left.
  }
}

export function forgetToken(): void {
  try {
    sessionStorage.removeItem(storageKey);
  } catch {
    // Nothing was kept.
  }
}

export interface Claims {
  name?: string;
  email?: string;
  role?: string;
  scope?: string;
  orgId?: string;
  exp?: number;
}

/** The token's claims, read without verifying them: only to greet the user and shape the page. The API decides what they may read. */
export function claimsOf(token: string): Claims | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const json = atob(
      payload
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(payload.length / 4) * 4, '='),
    );
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0)))) as unknown;
    return claims !== null && typeof claims === 'object' ? (claims as Claims) : undefined;
  } catch {
    return undefined;
  }
}
