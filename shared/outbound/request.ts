import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import type { SecureContext } from 'node:tls';
import { checkDestination } from './address.ts';

export interface OutboundAnswer {
  status: number;
  /** The answer's first `maxAnswerBytes` bytes, as text. */
  text: string;
}

/**
 * POSTs `body` to a checked URL: the name is resolved once and checked (shared/outbound/address.ts), and the
 * connection goes to that very address, the URL's host name kept for TLS (SNI, certificate) and the Host header, so
 * no second resolution can move it elsewhere. A redirect is an answer like any other: never followed. Throws
 * OutboundRefused when the destination is refused, a TimeoutError when no answer comes within `timeoutMs`.
 */
export async function postOutbound(
  url: string,
  options: {
    headers: Record<string, string>;
    body: string;
    timeoutMs: number;
    maxAnswerBytes: number;
    /** The CA certificates an https:// connection trusts instead of the system's (default: the system's). */
    ca?: string[];
    /**
     * The same certificates parsed once (tls.createSecureContext({ ca })), kept by a caller that posts often: the
     * connection uses it instead of parsing `ca` again (`ca` still names the agent's pool of connections).
     */
    secureContext?: SecureContext;
  },
): Promise<OutboundAnswer> {
  const destination = await checkDestination(url);
  // Every lookup of this connection answers the checked address.
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: destination.address, family: destination.family }]);
    else callback(null, destination.address, destination.family);
  };
  const send = destination.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<OutboundAnswer>((resolve, reject) => {
    const request = send(destination.url, {
      method: 'POST',
      lookup: pinned,
      ...(options.ca && { ca: options.ca }),
      ...(options.secureContext && { secureContext: options.secureContext }),
      headers: { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) },
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    request.on('error', (error) => reject(error.name === 'AbortError' && error.cause ? error.cause : error));
    request.on('response', (response: IncomingMessage) => {
      const parts: Buffer[] = [];
      let size = 0;
      response.on('data', (part: Buffer) => {
        if (size >= options.maxAnswerBytes) return;
        parts.push(part);
        size += part.length;
        if (size >= options.maxAnswerBytes) response.destroy();
      });
      const done = () =>
        resolve({
          status: response.statusCode ?? 0,
          text: Buffer.concat(parts).subarray(0, options.maxAnswerBytes).toString('utf8'),
        });
      response.on('end', done);
      response.on('close', done);
      response.on('error', reject);
    });
    request.end(options.body);
  });
}
