import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Receiver {
  /** The URL of one behaviour: ok (200 with a ticket id), fail (503), hang (never answers), slow (200 after 300 ms). */
  url(behaviour: 'ok' | 'fail' | 'hang' | 'slow'): string;
  received(behaviour: string): { headers: Record<string, string | undefined>; body: string }[];
  /** Drops the connections the hang behaviour holds, so their senders see the request fail at once. */
  release(): void;
  close(): Promise<void>;
}

/** A real PSA endpoint on loopback that records what it receives and answers as its path says. */
export async function startReceiver(): Promise<Receiver> {
  const received = new Map<string, { headers: Record<string, string | undefined>; body: string }[]>();
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (part: Buffer) => {
      body += part.toString();
    });
    req.on('end', () => {
      const behaviour = (req.url ?? '/').slice(1);
      const list = received.get(behaviour) ?? [];
      list.push({ headers: flat(req.headers), body });
      received.set(behaviour, list);
      if (behaviour === 'ok') res.writeHead(200, { 'content-type': 'application/json' }).end('{"ticketId":"T-1001"}');
      else if (behaviour === 'fail') res.writeHead(503).end('maintenance');
      else if (behaviour === 'slow') setTimeout(() => res.writeHead(202).end('{"ticket":{"id":42}}'), 300);
      else hanging.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (behaviour) => `http://127.0.0.1:${port}/${behaviour}`,
    received: (behaviour) => received.get(behaviour) ?? [],
    release: () => {
      for (const res of hanging.splice(0)) res.destroy();
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of hanging.splice(0)) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const flat = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value]));
