import { isIP } from 'node:net';

/** Proxy headers in the order they are trusted (TRUST_PROXY_HEADERS=true): the first present wins. */
const proxyHeaders = ['cf-connecting-ip', 'x-forwarded-for', 'x-real-ip'] as const;

/** Only a real IPv4 or IPv6 address of at most 45 characters is stored as an IP. */
export function asIp(value: string | undefined): string | null {
  const candidate = value?.trim().replace(/^\[(.*)\]$/, '$1');
  return candidate && candidate.length <= 45 && isIP(candidate) ? candidate : null;
}

/**
 * The client's address as claimed, not yet checked to be an IP: with TRUST_PROXY_HEADERS=true the
 * first present of cf-connecting-ip, x-forwarded-for (its first entry) and x-real-ip; otherwise, and when none is
 * present, the connection's source IP as API Gateway reports it. The audit writer stores a non-IP value in
 * details.rawIpAddress, so what a proxy claimed is never lost.
 */
export function clientAddress(
  headers: Record<string, string | undefined>,
  sourceIp: string | undefined,
): string | null {
  if (process.env.TRUST_PROXY_HEADERS === 'true') {
    const header = proxyHeaders.find((name) => headers[name]?.trim());
    if (header) return (header === 'x-forwarded-for' ? headers[header]!.split(',')[0]! : headers[header]!).trim();
  }
  return sourceIp ?? null;
}

/** The client's IP: clientAddress when it is an IP, else null. */
export const clientIp = (headers: Record<string, string | undefined>, sourceIp: string | undefined): string | null =>
  asIp(clientAddress(headers, sourceIp) ?? undefined);
