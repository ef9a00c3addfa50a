import type { HostedSignIn } from './hosted-sign-in.ts';

/**
 * The page's settings, from an optional config.json beside index.html (the deployment writes it): `apiBaseUrl`, where
 * the API lives (without one, the page's own origin; the API's routes are under `${apiBaseUrl}/api/v1`), and
 * `signIn`, the hosted sign-in page of the stack's own user pool, when it has one (./hosted-sign-in.ts).
 */
export interface PageConfig {
  apiBaseUrl: string;
  signIn?: HostedSignIn;
}

export async function loadConfig(): Promise<PageConfig> {
  const response = await fetch(new URL('config.json', document.baseURI), { cache: 'no-store' }).catch(() => undefined);
  // A host that answers every path with index.html (a single-page fallback) has no config.json either.
  if (!response?.ok || !/json/i.test(response.headers.get('content-type') ?? '')) return { apiBaseUrl: '' };
  const config = (await response.json().catch(() => undefined)) as
    | { apiBaseUrl?: unknown; signIn?: Partial<Record<keyof HostedSignIn, unknown>> }
    | undefined;
  if (typeof config?.apiBaseUrl !== 'string')
    throw new Error('config.json beside the page names no apiBaseUrl (expected {"apiBaseUrl": "https://…"})');
  const { authorizeUrl, tokenUrl, clientId } = config.signIn ?? {};
  const signIn =
    typeof authorizeUrl === 'string' && typeof tokenUrl === 'string' && typeof clientId === 'string'
      ? { authorizeUrl, tokenUrl, clientId }
      : undefined;
  return { apiBaseUrl: config.apiBaseUrl.replace(/\/+$/, ''), ...(signIn && { signIn }) };
}
