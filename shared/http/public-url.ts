/**
 * The address agents reach this API at, for scripts that carry it: PUBLIC_API_URL when configured (behind a custom
 * domain or CloudFront), else the scheme and host the request came in on.
 */
export function publicApiUrl(headers: Record<string, string | undefined>): string {
  const configured = process.env.PUBLIC_API_URL;
  if (configured) return configured.replace(/\/+$/, '');
  const proto = headers['x-forwarded-proto']?.split(',')[0]?.trim() || 'http';
  return `${proto}://${headers.host ?? 'localhost'}`;
}
