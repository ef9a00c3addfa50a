import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string | undefined>;
  body: string;
  json: any;
}

export interface ChannelReceivers {
  /** The URL of a path: `fail…` paths answer 503, every other one 202 (as PagerDuty and chat webhooks accept). */
  url(path: string): string;
  received(path: string): Received[];
  close(): Promise<void>;
}

/**
 * One real HTTP receiver on loopback standing for the services notifications go to (a webhook endpoint, Slack's and
 * Teams' incoming webhooks, PagerDuty's Events API): it records what each path receives.
 */
export async function startChannelReceivers(): Promise<ChannelReceivers> {
  const received = new Map<string, Received[]>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (part: Buffer) => {
      body += part.toString();
    });
    req.on('end', () => {
      const path = (req.url ?? '/').slice(1);
      const list = received.get(path) ?? [];
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      list.push({ headers: flat(req.headers), body, json });
      received.set(path, list);
      if (path.startsWith('fail')) res.writeHead(503).end('unavailable');
      else res.writeHead(202, { 'content-type': 'application/json' }).end('{"status":"success"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}/${path}`,
    received: (path) => received.get(path) ?? [],
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const flat = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value]));
