import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll } from 'vitest';
import { type Certificate, selfSignedCertificate } from '#infra/local/self-signed-certificate.ts';

/** Splits octet-counted frames (`<length> <message>`) off a buffer; answers the frames and what is left. */
export function splitFrames(buffer: Buffer): { frames: string[]; rest: Buffer } {
  const frames: string[] = [];
  let at = 0;
  for (;;) {
    const space = buffer.indexOf(0x20, at);
    if (space === -1) break;
    const length = Number(buffer.subarray(at, space).toString('ascii'));
    if (!Number.isInteger(length) || length <= 0) throw new Error(`Not an octet-counted frame at byte ${at}`);
    if (buffer.length < space + 1 + length) break;
    frames.push(buffer.subarray(space + 1, space + 1 + length).toString('utf8'));
    at = space + 1 + length;
  }
  return { frames, rest: buffer.subarray(at) };
}

export interface Receiver {
  /** host:port (syslog) or the URL (https). */
  endpoint: string;
  /** Every message taken, in arrival order (a syslog frame, or an NDJSON line). */
  messages: string[];
  /** Every request's headers and body (https). */
  requests: { headers: Record<string, string | string[] | undefined>; body: string }[];
  /** Waits until `count` messages have arrived. */
  waitFor(count: number): Promise<void>;
  /** Stops listening (connections are refused) until `up`. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

function receiverState() {
  const messages: string[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const add = (message: string) => {
    messages.push(message);
    for (const waiter of [...waiters])
      if (messages.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
  };
  const waitFor = (count: number) =>
    messages.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }));
  return { messages, add, waitFor };
}

async function listenOn(server: Server | HttpsServer, port: number): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** A syslog receiver with octet-counting framing over TCP, or TLS when given a certificate. */
export async function startSyslogReceiver(tls?: Certificate, host = '127.0.0.1'): Promise<Receiver> {
  const state = receiverState();
  const sockets = new Set<Socket>();
  const serve = (socket: Socket) => {
    sockets.add(socket);
    let buffer: Buffer = Buffer.alloc(0);
    socket.on('data', (part: Buffer) => {
      const split = splitFrames(Buffer.concat([buffer, part]));
      buffer = split.rest;
      for (const frame of split.frames) state.add(frame);
    });
    // The sender ended: everything it sent was read, and closing our side is the receipt.
    socket.on('end', () => socket.end());
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };
  const make = () => (tls ? createTlsServer({ cert: tls.cert, key: tls.key }, serve) : createTcpServer(serve));
  let server = make();
  const port = await listenOn(server, 0);
  return {
    endpoint: `${host}:${port}`,
    messages: state.messages,
    requests: [],
    waitFor: state.waitFor,
    down: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
    up: async () => {
      server = make();
      await listenOn(server, port);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        if (!server.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}

/** An HTTPS receiver of NDJSON batches: answers 200, or 503 while failing. */
export async function startHttpsReceiver(
  tls: Certificate,
  path = '/ingest',
): Promise<Receiver & { fail(on: boolean): void; hold(): { arrived: Promise<void>; release(): void } }> {
  const state = receiverState();
  const requests: Receiver['requests'] = [];
  let failing = false;
  let holding: { arrived: () => void; released: Promise<void> } | undefined;
  const server = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    let body = '';
    req.on('data', (part: Buffer) => {
      body += part.toString('utf8');
    });
    req.on('end', async () => {
      if (holding) {
        holding.arrived();
        await holding.released;
      }
      if (failing) {
        res.writeHead(503).end('maintenance');
        return;
      }
      requests.push({ headers: req.headers, body });
      for (const line of body.split('\n')) if (line) state.add(line);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"Success","code":0}');
    });
  });
  const port = await listenOn(server, 0);
  return {
    endpoint: `https://localhost:${port}${path}`,
    messages: state.messages,
    requests,
    waitFor: state.waitFor,
    fail: (on) => {
      failing = on;
    },
    /** Requests wait, unanswered, until `release`; `arrived` resolves when the first comes. */
    hold: () => {
      let arrived!: () => void;
      let release!: () => void;
      const came = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      holding = { arrived, released };
      return {
        arrived: came,
        release: () => {
          holding = undefined;
          release();
        },
      };
    },
    down: () => new Promise<void>((resolve) => server.close(() => resolve())),
    up: async () => {
      await listenOn(server, port);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        if (!server.listening) return resolve();
        server.close(() => resolve());
      }),
  };
}

/**
 * A test file's receivers: loopback endpoints allowed while it runs (OUTBOUND_ALLOW_LOOPBACK), one self-signed
 * certificate made on first use, and every receiver kept here closed after the file.
 */
export function useReceivers() {
  const receivers: Receiver[] = [];
  let cert: Certificate | undefined;
  beforeAll(() => {
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
  });
  afterAll(async () => {
    delete process.env.OUTBOUND_ALLOW_LOOPBACK;
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });
  return {
    get cert(): Certificate {
      cert ??= selfSignedCertificate();
      return cert;
    },
    keep<R extends Receiver>(receiver: R): R {
      receivers.push(receiver);
      return receiver;
    },
  };
}
