import {
  ApiGatewayManagementApiClient,
  DeleteConnectionCommand,
  GetConnectionCommand,
  GoneException,
  PayloadTooLargeException,
  PostToConnectionCommand,
} from '@aws-sdk/client-apigatewaymanagementapi';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { webSocketAccessLogFormat } from '#infra/aws/access-log-format.ts';
import { type RunningWsGateway, startWsGateway } from '#infra/local/ws-gateway.ts';
import type { WebSocketEvent } from '#shared/http/ws-handler.ts';

/** Every event the fake handlers got, in order. */
let events: WebSocketEvent[] = [];
let connectStatus = 200;
let defaultStatus = 200;
let gateway: RunningWsGateway;
/** The access-log lines the gateway rendered, in order. */
let accessLines: string[] = [];
let management: ApiGatewayManagementApiClient;

beforeAll(async () => {
  gateway = await startWsGateway({
    port: 0,
    host: '127.0.0.1',
    routes: {
      $connect: { handler: 'test/connect' },
      $disconnect: { handler: 'test/disconnect' },
      $default: { handler: 'test/default' },
    },
    accessLog: (line) => accessLines.push(line),
    loadHandler: async (path) => async (event) => {
      events.push(event);
      return { statusCode: path === 'test/connect' ? connectStatus : path === 'test/default' ? defaultStatus : 200 };
    },
  });
  // The real SDK client, signing with made-up credentials the emulator does not check.
  management = new ApiGatewayManagementApiClient({
    endpoint: gateway.managementEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
});
afterAll(async () => {
  management.destroy();
  await gateway.close();
});
beforeEach(() => {
  events = [];
  accessLines = [];
  connectStatus = 200;
  defaultStatus = 200;
});

function connect(
  path = '/',
  headers: Record<string, string> = {},
): Promise<{ socket: WebSocket; messages: string[]; closed: Promise<number> }> {
  const socket = new WebSocket(`${gateway.url}${path}`, { headers });
  const messages: string[] = [];
  socket.on('message', (data) => messages.push(data.toString()));
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ socket, messages, closed }));
    socket.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error('refused'), { status: res.statusCode })),
    );
    socket.once('error', reject);
  });
}

/** Until `check` holds, polled every 20 ms; the test's timeout bounds it. */
const until = async (check: () => boolean) => {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
};
/** A gateway of its own with a short idle timeout, its handlers answering 200. */
const idleGateway = (idleTimeoutMs: number) =>
  startWsGateway({
    port: 0,
    host: '127.0.0.1',
    idleTimeoutMs,
    routes: { $connect: { handler: 'c' }, $disconnect: { handler: 'd' }, $default: { handler: 'm' } },
    loadHandler: async () => async () => ({ statusCode: 200 }),
  });
const connectionId = () => events.find((e) => e.requestContext.routeKey === '$connect')!.requestContext.connectionId;

describe('the local WebSocket gateway', () => {
  it("calls $connect with the handshake's headers, query string and connection id, as API Gateway does", async () => {
    const { socket } = await connect('/?token=abc&x=1', { Authorization: 'Bearer lba_x', 'User-Agent': 'sim-agent/1' });
    const [event] = events;
    expect(event).toMatchObject({
      headers: { Authorization: 'Bearer lba_x', 'User-Agent': 'sim-agent/1' },
      queryStringParameters: { token: 'abc', x: '1' },
      multiValueQueryStringParameters: { token: ['abc'], x: ['1'] },
      isBase64Encoded: false,
      requestContext: {
        routeKey: '$connect',
        eventType: 'CONNECT',
        messageDirection: 'IN',
        connectionId: expect.stringMatching(/^[A-Za-z0-9_-]{12}=$/),
        identity: { sourceIp: '127.0.0.1', userAgent: 'sim-agent/1' },
        connectedAt: expect.any(Number),
        requestTimeEpoch: expect.any(Number),
      },
    });
    socket.close();
    await until(() => events.length === 2);
  });

  it('refuses the handshake with the status $connect answers', async () => {
    connectStatus = 401;
    await expect(connect()).rejects.toMatchObject({ status: 401 });
    expect(events.map((e) => e.requestContext.routeKey)).toEqual(['$connect']);
  });

  it('passes each message to $default and a close to $disconnect with its code', async () => {
    const { socket } = await connect();
    socket.send('{"requestId":"r1","data":[]}');
    await until(() => events.length === 2);
    expect(events[1]).toMatchObject({
      body: '{"requestId":"r1","data":[]}',
      isBase64Encoded: false,
      requestContext: {
        routeKey: '$default',
        eventType: 'MESSAGE',
        connectionId: connectionId(),
        messageId: expect.any(String),
      },
    });
    socket.close(4000, 'bye');
    await until(() => events.length === 3);
    expect(events[2]!.requestContext).toMatchObject({
      routeKey: '$disconnect',
      eventType: 'DISCONNECT',
      connectionId: connectionId(),
      disconnectStatusCode: 4000,
      disconnectReason: 'bye',
    });
  });

  it('tells the client when $default fails, as API Gateway does, and keeps the connection', async () => {
    defaultStatus = 500;
    const { socket, messages } = await connect();
    socket.send('hello');
    await until(() => messages.length === 1);
    expect(JSON.parse(messages[0]!)).toEqual({
      message: 'Internal server error',
      connectionId: connectionId(),
      requestId: expect.any(String),
    });
    expect(socket.readyState).toBe(WebSocket.OPEN);
    socket.close();
    await until(() => events.some((e) => e.requestContext.routeKey === '$disconnect'));
  });

  it('closes a connection with 1009 on a message above 128 KB, and takes one of 128 KB sent in fragments', async () => {
    const { socket } = await connect();
    const limit = 'x'.repeat(128 * 1024);
    socket.send(limit.slice(0, 32 * 1024), { fin: false });
    socket.send(limit.slice(32 * 1024), { fin: true });
    await until(() => events.some((e) => e.requestContext.routeKey === '$default'));
    expect(events.find((e) => e.requestContext.routeKey === '$default')!.body).toHaveLength(128 * 1024);
    socket.close();
    const { socket: second, closed } = await connect();
    second.send(`${limit}y`);
    expect(await closed).toBe(1009);
    await until(() => events.filter((e) => e.requestContext.routeKey === '$disconnect').length === 2);
  });

  it('takes a keep-alive (type ping) without invoking $default and without a reply, as its MOCK route in AWS does', async () => {
    const { socket, messages } = await connect();
    socket.send('{"type":"ping"}');
    socket.send('{"type":"heartbeat"}');
    await until(() => events.length === 2);
    expect(events.map((e) => [e.requestContext.routeKey, e.body])).toEqual([
      ['$connect', undefined],
      ['$default', '{"type":"heartbeat"}'],
    ]);
    expect(messages).toEqual([]);
    socket.close();
    await until(() => events.some((e) => e.requestContext.routeKey === '$disconnect'));
  });

  it("writes the stage's access-log line of each $connect, message (a keep-alive's too) and $disconnect, in the stage's format", async () => {
    const { socket } = await connect();
    socket.send('{"type":"ping"}');
    socket.send('{"type":"heartbeat"}');
    await until(() => events.length === 2);
    socket.close(1000);
    await until(() => accessLines.length === 4);
    const lines = accessLines.map((line) => JSON.parse(line) as Record<string, string>);
    for (const line of lines) expect(Object.keys(line)).toEqual(Object.keys(JSON.parse(webSocketAccessLogFormat)));
    expect(lines.map((line) => [line.routeKey, line.eventType, line.status, line.connectionId])).toEqual([
      ['$connect', 'CONNECT', '200', connectionId()],
      ['ping', 'MESSAGE', '200', connectionId()],
      ['$default', 'MESSAGE', '200', connectionId()],
      ['$disconnect', 'DISCONNECT', '200', connectionId()],
    ]);
    expect(lines[2]).toMatchObject({
      requestId: events[1]!.requestContext.requestId,
      requestTime: expect.stringMatching(/^\d{13}$/),
      latencyMs: expect.stringMatching(/^\d+$/),
      integrationError: '-',
      sourceIp: '127.0.0.1',
    });
    // API Gateway answers the keep-alive itself: no integration, no latency of one.
    expect(lines[1]).toMatchObject({ latencyMs: '-', integrationError: '-' });
  });

  it('logs a refused handshake with its status, and a failed $default with the integration error', async () => {
    connectStatus = 401;
    await expect(connect()).rejects.toMatchObject({ status: 401 });
    connectStatus = 200;
    defaultStatus = 500;
    const { socket, messages } = await connect();
    socket.send('hello');
    await until(() => messages.length === 1);
    const lines = accessLines.map((line) => JSON.parse(line) as Record<string, string>);
    expect(lines.map((line) => [line.routeKey, line.status, line.integrationError === '-'])).toEqual([
      ['$connect', '401', true],
      ['$connect', '200', true],
      ['$default', '500', false],
    ]);
    socket.close();
    await until(() => events.some((e) => e.requestContext.routeKey === '$disconnect'));
  });

  it('keeps a connection whose keep-alives come within the idle timeout', async () => {
    const idle = await idleGateway(600);
    try {
      const socket = new WebSocket(idle.url);
      await new Promise((resolve) => socket.once('open', resolve));
      const opened = Date.now();
      const closed = new Promise<number>((resolve) => socket.once('close', resolve));
      const pings = setInterval(() => socket.send('{"type":"ping"}'), 50);
      // Open after three idle timeouts' worth of keep-alives, then closed for idleness once they stop.
      await until(() => Date.now() - opened > 1500);
      expect(socket.readyState).toBe(WebSocket.OPEN);
      clearInterval(pings);
      expect(await closed).toBe(1001);
    } finally {
      await idle.close();
    }
  });

  it('closes a connection idle for the idle timeout with 1001', async () => {
    const idle = await idleGateway(150);
    try {
      const socket = new WebSocket(idle.url);
      const code = await new Promise<number>((resolve) => socket.once('close', resolve));
      expect(code).toBe(1001);
    } finally {
      await idle.close();
    }
  });
});

describe('its management API, through the real @aws-sdk/client-apigatewaymanagementapi client', () => {
  it('posts data to a connection (PostToConnection)', async () => {
    const { socket, messages } = await connect();
    await management.send(
      new PostToConnectionCommand({ ConnectionId: connectionId(), Data: Buffer.from('{"type":"eventlogs.list"}') }),
    );
    await until(() => messages.length === 1);
    expect(messages[0]).toBe('{"type":"eventlogs.list"}');
    socket.close();
  });

  it('describes a connection (GetConnection)', async () => {
    const { socket } = await connect('/', { 'User-Agent': 'sim-agent/2' });
    const described = await management.send(new GetConnectionCommand({ ConnectionId: connectionId() }));
    expect(described.Identity).toEqual({ SourceIp: '127.0.0.1', UserAgent: 'sim-agent/2' });
    expect(described.ConnectedAt).toBeInstanceOf(Date);
    socket.close();
  });

  it('closes a connection (DeleteConnection), which then gets its $disconnect', async () => {
    const { closed } = await connect();
    await management.send(new DeleteConnectionCommand({ ConnectionId: connectionId() }));
    expect(await closed).toBe(1000);
    await until(() => events.some((e) => e.requestContext.routeKey === '$disconnect'));
  });

  it('answers GoneException for a connection it does not know', async () => {
    await expect(
      management.send(new PostToConnectionCommand({ ConnectionId: 'unknown=', Data: Buffer.from('x') })),
    ).rejects.toBeInstanceOf(GoneException);
    await expect(management.send(new DeleteConnectionCommand({ ConnectionId: 'unknown=' }))).rejects.toBeInstanceOf(
      GoneException,
    );
  });

  it('refuses data above 128 KB with PayloadTooLargeException', async () => {
    const { socket } = await connect();
    await expect(
      management.send(
        new PostToConnectionCommand({ ConnectionId: connectionId(), Data: Buffer.alloc(128 * 1024 + 1, 'x') }),
      ),
    ).rejects.toBeInstanceOf(PayloadTooLargeException);
    socket.close();
  });
});
