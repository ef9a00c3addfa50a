import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * The one check of every URL the service calls (PSA integrations; notification channels, webhooks and streaming
 * destinations go through it too): refused at configuration and again at each delivery, so a URL can never reach
 * the cloud's metadata service, the Lambda runtime API, the VPC or the host itself.
 */

/** What a name resolves to: every address, as text. */
export type Resolve = (hostname: string) => Promise<string[]>;

const systemResolve: Resolve = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

let resolve: Resolve = systemResolve;

/** Replaces the resolver (tests answer names with chosen addresses); without an argument the system's again. */
export function useResolver(replacement?: Resolve): void {
  resolve = replacement ?? systemResolve;
}

/**
 * Loopback is allowed only for local development (OUTBOUND_ALLOW_LOOPBACK=true, npm start and tests with a receiver
 * on 127.0.0.1), and never inside Lambda, where 127.0.0.1:9001 is the runtime API.
 */
export function loopbackAllowed(): boolean {
  if (process.env.AWS_LAMBDA_FUNCTION_NAME || process.env.AWS_LAMBDA_RUNTIME_API) return false;
  return process.env.OUTBOUND_ALLOW_LOOPBACK === 'true';
}

/** IPv4 ranges (ipaddr.js names) and why each is refused; `unicast` is the only one allowed. */
const ipv4Reasons: Record<string, string> = {
  loopback: 'loopback address',
  linkLocal: 'link-local address',
  private: 'private address',
  carrierGradeNat: 'shared address',
  multicast: 'multicast address',
  unspecified: 'unspecified address',
  broadcast: 'broadcast address',
};
const ipv6Reasons: Record<string, string> = {
  loopback: 'loopback address',
  linkLocal: 'link-local address',
  uniqueLocal: 'private address',
  deprecatedSiteLocal: 'private address',
  multicast: 'multicast address',
  unspecified: 'unspecified address',
};
/** IPv6 forms that carry an IPv4 address in their last 32 bits: the IPv4 address decides. */
const embeddingIpv4 = [ipaddr.IPv6.parseCIDR('::ffff:0:0/96'), ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96')];
const nat64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
/** Local-use NAT64 (64:ff9b:1::/48) translates to the operator's own network. */
const localNat64 = ipaddr.IPv6.parseCIDR('64:ff9b:1::/48');
/** The deprecated IPv4-compatible form (::a.b.c.d): never a public destination. */
const ipv4Compatible = ipaddr.IPv6.parseCIDR('::/96');

/** Why an address is refused (`private address`, …), or undefined for a public unicast address. */
export function addressProblem(text: string): string | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!ipaddr.isValid(bare)) return 'not an IP address';
  const address = ipaddr.parse(bare);
  if (address.kind() === 'ipv4') return ipv4Problem(address as ipaddr.IPv4);
  const v6 = address as ipaddr.IPv6;
  if (embeddingIpv4.some((range) => v6.match(range)) || v6.match(nat64))
    return ipv4Problem(new ipaddr.IPv4(v6.toByteArray().slice(12)));
  const range = v6.range();
  if (range === 'loopback' && loopbackAllowed()) return undefined;
  if (ipv6Reasons[range]) return ipv6Reasons[range];
  if (v6.match(localNat64)) return 'private address';
  if (v6.match(ipv4Compatible)) return 'reserved address';
  return range === 'unicast' ? undefined : 'reserved address';
}

function ipv4Problem(address: ipaddr.IPv4): string | undefined {
  const range = address.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && loopbackAllowed()) return undefined;
  return ipv4Reasons[range] ?? 'reserved address';
}

/** Names that only mean something inside a network (cloud metadata services, mDNS, private zones). */
const internalNames = new Set(['metadata.google.internal', 'metadata.goog', 'instance-data', 'metadata']);
const internalSuffixes = ['.internal', '.local', '.localdomain', '.home.arpa', '.lan', '.intranet', '.corp', '.arpa'];

/**
 * What the URL's text alone refuses: a scheme other than https (http:// only to loopback under the local allowance),
 * credentials, an address literal outside the public unicast ranges, or an internal name.
 */
export function urlProblem(text: string): string | undefined {
  if (!URL.canParse(text)) return 'not a URL';
  const url = new URL(text);
  if (url.username || url.password) return 'credentials in URL';
  const host = url.hostname.replace(/\.$/, '');
  const literal = ipaddr.isValid(host.replace(/^\[|\]$/g, ''));
  const loopbackName = host === 'localhost' || host.endsWith('.localhost');
  const loopback = loopbackName || (literal && isLoopbackLiteral(host));
  if (url.protocol === 'http:') {
    if (!loopback || !loopbackAllowed()) return 'http:// is only for a loopback address in local development';
  } else if (url.protocol !== 'https:') return 'only https:// URLs are called';
  if (literal) return addressProblem(host);
  if (loopbackName) return loopbackAllowed() ? undefined : 'loopback address';
  if (!host.includes('.') || internalNames.has(host) || internalSuffixes.some((suffix) => host.endsWith(suffix)))
    return 'internal name';
  return undefined;
}

function isLoopbackLiteral(host: string): boolean {
  return ipaddr.process(host.replace(/^\[|\]$/g, '')).range() === 'loopback';
}

/** A resolution that takes longer than this fails: a stalled resolver must not hold a request or a delivery. */
const resolveTimeoutMs = 5_000;

function withinResolveTime<T>(answer: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('resolution timed out')), resolveTimeoutMs).unref();
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** A destination that passed the check: connect to `address` (the one checked), speak to `url`'s host name. */
export interface CheckedDestination {
  url: URL;
  address: string;
  family: 4 | 6;
}

export class OutboundRefused extends Error {
  constructor(readonly reason: string) {
    super(`refused: ${reason}`);
  }
}

/**
 * The check at delivery: the URL's text, then one resolution of its name, every address of which must pass (a name
 * with one inside address is refused). The caller connects to the returned address, so nothing resolves twice.
 * Throws OutboundRefused; a name that does not resolve is refused as `name does not resolve`.
 */
export async function checkDestination(text: string): Promise<CheckedDestination> {
  const problem = urlProblem(text);
  if (problem) throw new OutboundRefused(problem);
  const url = new URL(text);
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  let addresses: string[];
  if (ipaddr.isValid(host)) addresses = [host];
  else {
    try {
      addresses = await withinResolveTime(resolve(host));
    } catch {
      throw new OutboundRefused('name does not resolve');
    }
  }
  if (addresses.length === 0) throw new OutboundRefused('name does not resolve');
  for (const address of addresses) {
    const reason = addressProblem(address);
    if (reason) throw new OutboundRefused(reason);
  }
  const address = ipaddr.process(addresses[0]!);
  return { url, address: address.toString(), family: address.kind() === 'ipv4' ? 4 : 6 };
}

/**
 * The check at configuration: the URL's text, and what its name resolves to now. A name that does not resolve (yet)
 * is accepted: only an inside address is a reason to refuse, and each delivery checks again.
 */
export async function configurationProblem(text: string): Promise<string | undefined> {
  try {
    await checkDestination(text);
    return undefined;
  } catch (error) {
    if (!(error instanceof OutboundRefused)) throw error;
    return error.reason === 'name does not resolve' ? undefined : error.reason;
  }
}
