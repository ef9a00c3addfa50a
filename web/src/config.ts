/**
 * Where the API lives: `apiBaseUrl` of an optional config.json beside index.html (the deployment writes it);
 * without one, the page's own origin. The API's routes are under `${apiBaseUrl}/api/v1`.
 */
export async function loadApiBaseUrl(): Promise<string> {
  const response = await fetch(new URL('config.json', document.baseURI), { cache: 'no-store' }).catch(() => undefined);
  // A host that answers every path with index.html (a single-page fallback) has no config.json either.
  if (!response?.ok || !/json/i.test(response.headers.get('content-type') ?? '')) return '';
  const config = (await response.json().catch(() => undefined)) as { apiBaseUrl?: unknown } | undefined;
  if (typeof config?.apiBaseUrl !== 'string')
    throw new Error('config.json beside the page names no apiBaseUrl (expected {"apiBaseUrl": "https://…"})');
  return config.apiBaseUrl.replace(/\/+$/, '');
}
