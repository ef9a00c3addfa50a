/**
 * How a batch of rendered records reaches each kind of destination. Every host and URL goes through the one outbound
 * check (shared/outbound/address.ts) at each delivery, and the connection goes to the address it checked. A batch
 * is delivered when the receiver took all of it: TCP and TLS syslog when the receiver closed the connection after
 * ours ended cleanly (a connection without progress for the timeout fails), HTTPS and HEC on a 2xx answer. Anything
 * else throws, and the cursor does not move.
 */
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import {
  checkServerIdentity,
  createSecureContext,
  rootCertificates,
  type SecureContext,
  connect as tlsConnect,
} from 'node:tls';
import { signature } from '../alerts/psa-delivery.ts';
import { checkDestination } from '../outbound/address.ts';
import { postOutbound } from '../outbound/request.ts';
import { endpointUrl, type StreamType } from './schemas.ts';

/** One attempt waits this long for a connection, an answer or a close (AUDIT_STREAM_TIMEOUT_MS). */
export const timeoutMs = () => Number(process.env.AUDIT_STREAM_TIMEOUT_MS) || 10_000;
const maxAnswerBytes = 16 * 1024;

export class DeliveryFailed extends Error {}

export type Destination = {
  id: string;
  type: StreamType;
  endpoint: string;
  caCertificate: string | null;
};

/** The CA certificates a TLS connection trusts: the system's, and the destination's own, parsed once. */
type Trust = { ca: string[]; secureContext: SecureContext };

/** Trusts by the destination's own CA certificate (the most recent ones kept). */
const trusts = new Map<string, Trust>();
const keptTrusts = 100;

/**
 * What a TLS connection of a destination trusts: the system's CA certificates, and the destination's own when it
 * gives one (undefined: the system's alone). The system's hundred-odd certificates and the destination's are parsed
 * into a secure context once, not for every connection (every page of a syslog destination opens one).
 */
function trusted(ca: string | null): Trust | undefined {
  if (!ca) return undefined;
  let trust = trusts.get(ca);
  if (!trust) {
    const all = [...rootCertificates, ca];
    trust = { ca: all, secureContext: createSecureContext({ ca: all }) };
    if (trusts.size >= keptTrusts) trusts.delete(trusts.keys().next().value!);
    trusts.set(ca, trust);
  }
  return trust;
}

/**
 * Writes octet-counted syslog frames on one connection (TLS for syslog-tls), ends it, and waits for the receiver to
 * close its side: a receiver that took the bytes and then reset, or never answered, fails the batch.
 */
export async function sendSyslog(destination: Destination, frames: string[]): Promise<void> {
  const checked = await checkDestination(endpointUrl(destination.type, destination.endpoint)!);
  const port = Number(checked.url.port);
  const hostname = checked.url.hostname.replace(/^\[|\]$/g, '');
  const socket: Socket =
    destination.type === 'syslog-tls'
      ? tlsConnect({
          host: checked.address,
          port,
          servername: isIP(hostname) ? undefined : hostname,
          secureContext: trusted(destination.caCertificate)?.secureContext,
          // Identity is checked against the endpoint's name (or address), not the resolved address connected to.
          checkServerIdentity: (_host, cert) => checkServerIdentity(hostname, cert),
        })
      : tcpConnect({ host: checked.address, port, family: checked.family });
  await new Promise<void>((resolve, reject) => {
    // The wait is for progress, not for the whole page: a receiver still taking the bytes of a large page is alive;
    // one that took nothing, or did not close, for the timeout fails the page.
    socket.setTimeout(timeoutMs(), () => {
      socket.destroy();
      reject(new DeliveryFailed(`No close from the receiver within ${timeoutMs()} ms`));
    });
    let failed: Error | undefined;
    socket.on('error', (error) => {
      failed = error;
    });
    socket.on('close', (hadError) => {
      socket.setTimeout(0);
      if (hadError || failed) reject(failed ?? new DeliveryFailed('The connection was reset'));
      else resolve();
    });
    socket.once(destination.type === 'syslog-tls' ? 'secureConnect' : 'connect', () => {
      socket.end(frames.join(''));
    });
    // The receiver closing its side after our end is its receipt; data it sends is ignored.
    socket.on('data', () => undefined);
    socket.on('end', () => socket.destroy());
  });
}

/**
 * POSTs a batch as NDJSON, signed like PSA deliveries: `X-Logbook-Signature: sha256=<hex HMAC-SHA256 of
 * "<X-Logbook-Timestamp>.<body>">` with the destination's key.
 */
export async function sendHttps(destination: Destination, key: string, body: string): Promise<void> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  await expect2xx(
    destination.endpoint,
    {
      'content-type': 'application/x-ndjson',
      'user-agent': 'Logbook-Audit-Stream/1',
      'x-logbook-stream': destination.id,
      'x-logbook-timestamp': timestamp,
      'x-logbook-signature': signature(key, timestamp, body),
      body,
    },
    destination.caCertificate,
  );
}

/** POSTs a batch of HEC events (concatenated JSON objects) to the collector, with its token. */
export async function sendHec(destination: Destination, token: string, body: string): Promise<void> {
  const url = `${destination.endpoint.replace(/\/+$/, '')}/services/collector/event`;
  await expect2xx(
    url,
    {
      'content-type': 'application/json',
      'user-agent': 'Logbook-Audit-Stream/1',
      authorization: `Splunk ${token}`,
      body,
    },
    destination.caCertificate,
  );
}

async function expect2xx(url: string, parts: Record<string, string> & { body: string }, ca: string | null) {
  const { body, ...headers } = parts;
  const answer = await postOutbound(url, { headers, body, timeoutMs: timeoutMs(), maxAnswerBytes, ...trusted(ca) });
  if (answer.status < 200 || answer.status >= 300)
    throw new DeliveryFailed(`HTTP ${answer.status}${answer.text ? `: ${answer.text.slice(0, 200)}` : ''}`);
}
