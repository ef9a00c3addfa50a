/**
 * Local emulation of an API Gateway WebSocket API: connections, messages and closes become the
 * $connect, $default and $disconnect events the Lambda handlers of the route table get in AWS, and
 * the same port serves the management API (`POST|GET|DELETE /@connections/{id}`) that the real
 * `@aws-sdk/client-apigatewaymanagementapi` client calls (its signature is not checked).
 * API Gateway's limits hold: a message above 128 KB closes the connection with 1009, and so does
 * ten minutes without a message from the client. A message whose `type` API Gateway takes itself (the keep-alive,
 * a MOCK route in AWS) keeps the connection alive and invokes nothing.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { batchedJobKinds, runJob, runJobBatch } from '#functions/queue/jobs.ts';
import type { WebSocketEvent, WebSocketHandler } from '#shared/http/ws-handler.ts';
import { gatewayOnlyMessageTypes, maxMessageBytes } from '#shared/live-query/protocol.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { runJobsLocally } from '#shared/queue/work-queue.ts';
import { type AccessLogSink, webSocketAccessLogLine } from './access-log.ts';

type RouteKey = '$connect' | '$disconnect' | '$default';

export interface WsGatewayOptions {
  port: number;
  /** Interface to listen on; without one, every interface. */
  host?: string;
  routes: Record<RouteKey, { handler: string }>;
  /** Resolves a handler module path (under functions/, no extension) to its handler; defaults to importing it. */
  loadHandler?: (handlerPath: string) => Promise<WebSocketHandler>;
  /** API Gateway closes a connection after this long without a message from the client (10 minutes). */
  idleTimeoutMs?: number;
  /**
   * Receives the stage's access-log line (infra/aws/access-log-format.ts) of each $connect, message and $disconnect,
   * as its log group would: a message API Gateway takes itself too.
   */
  accessLog?: AccessLogSink;
}

export interface RunningWsGateway {
  port: number;
  /** Where agents connect: ws://host:port */
  url: string;
  /** WS_MANAGEMENT_ENDPOINT for the management API client: http://host:port */
  managementEndpoint: string;
  /** Drops every connection (without $disconnect, as if the API vanished) and closes the server. */
  close(): Promise<void>;
}

/** The route of a message API Gateway answers itself (its `type`, as the route selection reads it), or none. */
function gatewayRoute(text: string): string | undefined {
  try {
    const type = String((JSON.parse(text) as { type?: unknown } | null)?.type);
    return (gatewayOnlyMessageTypes as readonly string[]).includes(type) ? type : undefined;
  } catch {
    return undefined;
  }
}

const IDLE_TIMEOUT_MS = 10 * 60_000;
const STAGE = 'local';

/** What every event of a connection repeats. */
interface ConnectionBase {
  connectionId: string;
  connectedAt: number;
  domainName: string;
  sourceIp: string;
  userAgent: string;
}

interface Connection {
  socket: WebSocket;
  connectedAt: number;
  lastActiveAt: number;
  sourceIp: string;
  userAgent: string;
  domainName: string;
  idle?: NodeJS.Timeout;
  /** The close code API Gateway would report in $disconnect. */
  closeCode?: number;
  closeReason?: string;
}

export async function startWsGateway(options: WsGatewayOptions): Promise<RunningWsGateway> {
  // Background jobs run in this process, as the queue worker runs them in AWS (shared/queue/work-queue.ts).
  runJobsLocally(runJob, {
    kinds: batchedJobKinds,
    run: async (jobs) => {
      await runJobBatch(jobs);
    },
  });
  const load = options.loadHandler ?? importHandler;
  const handlers = new Map<string, Promise<WebSocketHandler>>();
  const handlerFor = (routeKey: RouteKey): Promise<WebSocketHandler> => {
    const path = options.routes[routeKey].handler;
    // Wrapped as the stack's entry wraps it: Powertools in Lambda's environment, the handler itself elsewhere.
    const handler = handlers.get(path) ?? load(path).then((loaded) => observedHandler(loaded));
    handlers.set(path, handler);
    return handler;
  };
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  const connections = new Map<string, Connection>();
  // Every handler invocation under way: closing waits for them, as a Lambda's invocation runs to its end.
  const invocations = new Set<Promise<unknown>>();
  let closing = false;
  const wss = new WebSocketServer({ noServer: true, maxPayload: maxMessageBytes });

  function logAccess(requestContext: WebSocketEvent['requestContext'], status: number, latencyMs?: number): void {
    options.accessLog?.(
      webSocketAccessLogLine({
        requestId: requestContext.requestId,
        requestTimeEpoch: requestContext.requestTimeEpoch,
        routeKey: requestContext.routeKey,
        eventType: requestContext.eventType,
        connectionId: requestContext.connectionId,
        status,
        integrationLatency: latencyMs,
        'integration.error': status >= 500 ? 'Internal server error' : undefined,
        'identity.sourceIp': requestContext.identity?.sourceIp,
      }),
    );
  }

  function invoke(routeKey: RouteKey, event: WebSocketEvent): Promise<APIGatewayProxyResultV2 | undefined> {
    const context = buildContext(options.routes[routeKey].handler);
    const done = (async () => {
      const started = Date.now();
      let result: APIGatewayProxyResultV2 | undefined;
      try {
        result = await (await handlerFor(routeKey))(event, context);
        return result;
      } catch (error) {
        console.error(`[${context.functionName}] ${event.requestContext.requestId}`, error);
        return undefined;
      } finally {
        logAccess(event.requestContext, statusOf(result), Date.now() - started);
      }
    })();
    invocations.add(done);
    void done.finally(() => invocations.delete(done));
    return done;
  }

  const server = createServer((req, res) => {
    manage(req, res).catch((error: unknown) => {
      console.error(error);
      if (!res.headersSent) reply(res, 500, { message: 'Internal server error' });
    });
  });

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    upgrade(req, socket, head).catch((error: unknown) => {
      console.error(error);
      socket.destroy();
    });
  });

  async function upgrade(req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    socket.on('error', () => undefined);
    const connectionId = newConnectionId();
    const connectedAt = Date.now();
    const sourceIp = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const { headers, multiValueHeaders } = handshakeHeaders(req);
    const url = new URL(req.url ?? '/', 'http://localhost');
    const query = queryParameters(url.searchParams);
    const domainName = req.headers.host ?? `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const base = { connectionId, connectedAt, domainName, sourceIp, userAgent: req.headers['user-agent'] ?? '' };
    const result = await invoke('$connect', {
      headers,
      multiValueHeaders,
      ...(query ? { queryStringParameters: query.single, multiValueQueryStringParameters: query.multi } : {}),
      requestContext: requestContext(base, '$connect', 'CONNECT'),
      isBase64Encoded: false,
    } as WebSocketEvent);
    const status = statusOf(result);
    if (status < 200 || status > 299) return refuse(socket, status);
    if (socket.destroyed) {
      // The client gave up during $connect: API Gateway reports the connection's end all the same.
      await invoke('$disconnect', disconnectEvent(base, 1006, 'Client closed the handshake'));
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, base));
  }

  function accept(socket: WebSocket, base: ConnectionBase): void {
    const connection: Connection = {
      socket,
      connectedAt: base.connectedAt,
      lastActiveAt: Date.now(),
      sourceIp: base.sourceIp,
      userAgent: base.userAgent,
      domainName: base.domainName,
    };
    connections.set(base.connectionId, connection);
    const resetIdle = () => {
      clearTimeout(connection.idle);
      connection.idle = setTimeout(() => closeConnection(base.connectionId, 1001, 'Going away'), idleTimeoutMs);
      connection.idle.unref();
    };
    resetIdle();
    socket.on('message', (data: RawData, isBinary: boolean) => {
      connection.lastActiveAt = Date.now();
      resetIdle();
      const body = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
      const type = isBinary ? undefined : gatewayRoute(body.toString('utf8'));
      if (type) return logAccess(requestContext(base, type, 'MESSAGE'), 200);
      const event = {
        requestContext: {
          ...requestContext(base, '$default', 'MESSAGE'),
          messageId: `${randomBytes(9).toString('base64url')}=`,
        },
        body: isBinary ? body.toString('base64') : body.toString('utf8'),
        isBase64Encoded: isBinary,
      } as WebSocketEvent;
      void invoke('$default', event).then((result) => {
        // As API Gateway does when the integration fails: the client is told, the connection stays.
        if (result === undefined || statusOf(result) >= 500) {
          send(
            base.connectionId,
            JSON.stringify({
              message: 'Internal server error',
              connectionId: base.connectionId,
              requestId: event.requestContext.requestId,
            }),
          );
        }
      });
    });
    // A message above the limit: ws closes with 1009 itself, as API Gateway does.
    socket.on('error', () => undefined);
    socket.on('close', (code: number, reason: Buffer) => {
      clearTimeout(connection.idle);
      if (closing) return;
      connections.delete(base.connectionId);
      void invoke(
        '$disconnect',
        disconnectEvent(base, connection.closeCode ?? code, connection.closeReason ?? reason.toString('utf8')),
      );
    });
  }

  function send(connectionId: string, data: string | Buffer): boolean {
    const connection = connections.get(connectionId);
    if (!connection || connection.socket.readyState !== connection.socket.OPEN) return false;
    connection.socket.send(data, { binary: false });
    return true;
  }

  function closeConnection(connectionId: string, code: number, reason: string): boolean {
    const connection = connections.get(connectionId);
    if (!connection) return false;
    connection.closeCode = code;
    connection.closeReason = reason;
    // Closing is closed for the management API: a post to it is Gone.
    connections.delete(connectionId);
    connection.socket.close(code, reason);
    return true;
  }

  function disconnectEvent(base: ConnectionBase, code: number, reason: string): WebSocketEvent {
    return {
      headers: { Host: base.domainName },
      requestContext: {
        ...requestContext(base, '$disconnect', 'DISCONNECT'),
        disconnectStatusCode: code,
        disconnectReason: reason,
      },
      isBase64Encoded: false,
    } as WebSocketEvent;
  }

  /** The management API of API Gateway: /@connections/{id}, optionally after the stage (/local/@connections/{id}). */
  async function manage(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const match = /^(?:\/[^/]+)?\/@connections\/([^/]+)$/.exec(path);
    if (!match) return reply(res, 404, { message: 'Not Found' });
    const connectionId = decodeURIComponent(match[1]!);
    const method = (req.method ?? 'GET').toUpperCase();
    const body = await readBody(req);
    const connection = connections.get(connectionId);
    if (!connection) return awsError(res, 410, 'GoneException', null);
    if (method === 'POST') {
      if (body.length > maxMessageBytes) return awsError(res, 413, 'PayloadTooLargeException', 'Message too long');
      send(connectionId, body);
      res.writeHead(200).end();
      return;
    }
    if (method === 'DELETE') {
      closeConnection(connectionId, 1000, '');
      res.writeHead(204).end();
      return;
    }
    if (method === 'GET') {
      return reply(res, 200, {
        connectedAt: new Date(connection.connectedAt).toISOString(),
        identity: { sourceIp: connection.sourceIp, userAgent: connection.userAgent },
        lastActiveAt: new Date(connection.lastActiveAt).toISOString(),
      });
    }
    return reply(res, 405, { message: 'Method Not Allowed' });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host;
  const shownHost =
    host === undefined || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  return {
    port,
    url: `ws://${shownHost}:${port}`,
    managementEndpoint: `http://${shownHost}:${port}`,
    async close() {
      // The API itself goes away: its connections end without $disconnect (a later start finds their rows
      // stale, and the first postToConnection that answers Gone removes them).
      closing = true;
      for (const { socket } of connections.values()) socket.terminate();
      connections.clear();
      await Promise.allSettled([...invocations]);
      wss.close();
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}

/** The default loader: the handler module's exported `handler`. */
async function importHandler(handlerPath: string): Promise<WebSocketHandler> {
  const module = (await import(new URL(`../../functions/${handlerPath}.ts`, import.meta.url).href)) as {
    handler?: unknown;
  };
  if (typeof module.handler !== 'function') throw new Error(`functions/${handlerPath}.ts exports no handler`);
  return module.handler as WebSocketHandler;
}

/** A connection id in API Gateway's form (12 base64 characters and '='). */
function newConnectionId(): string {
  return `${randomBytes(9).toString('base64url')}=`;
}

function requestContext(
  base: ConnectionBase,
  routeKey: string,
  eventType: 'CONNECT' | 'MESSAGE' | 'DISCONNECT',
): WebSocketEvent['requestContext'] {
  const now = Date.now();
  return {
    routeKey,
    eventType,
    extendedRequestId: `${randomBytes(9).toString('base64url')}=`,
    requestTime: gatewayTime(now),
    messageDirection: 'IN',
    stage: STAGE,
    connectedAt: base.connectedAt,
    requestTimeEpoch: now,
    identity: { sourceIp: base.sourceIp, userAgent: base.userAgent },
    requestId: `${randomBytes(9).toString('base64url')}=`,
    domainName: base.domainName,
    connectionId: base.connectionId,
    apiId: 'local',
  } as WebSocketEvent['requestContext'];
}

/** The handshake's headers as API Gateway passes them to $connect: names as the client sent them. */
function handshakeHeaders(req: IncomingMessage): {
  headers: Record<string, string>;
  multiValueHeaders: Record<string, string[]>;
} {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    const value = req.rawHeaders[i + 1]!;
    headers[name] = name in headers ? `${headers[name]},${value}` : value;
    multiValueHeaders[name] = [...(multiValueHeaders[name] ?? []), value];
  }
  return { headers, multiValueHeaders };
}

function queryParameters(
  params: URLSearchParams,
): { single: Record<string, string>; multi: Record<string, string[]> } | undefined {
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [key, value] of params) {
    single[key] = value;
    multi[key] = [...(multi[key] ?? []), value];
  }
  return Object.keys(single).length > 0 ? { single, multi } : undefined;
}

function statusOf(result: APIGatewayProxyResultV2 | undefined): number {
  if (result === undefined) return 500;
  return typeof result === 'object' && result !== null && 'statusCode' in result ? (result.statusCode ?? 200) : 200;
}

/** Refuses the handshake with the status $connect answered (401 for a bad token), as API Gateway does. */
function refuse(socket: Socket, status: number): void {
  const text =
    { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 500: 'Internal Server Error' }[status] ?? 'Error';
  const body = JSON.stringify({ message: text });
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** An error of the management API as the SDK reads it: the type in x-amzn-errortype. */
function awsError(res: ServerResponse, status: number, type: string, message: string | null): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-errortype': type,
    'x-amzn-requestid': randomUUID(),
  });
  res.end(JSON.stringify({ message }));
}

function reply(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** API Gateway's `requestTime`, e.g. 21/Nov/2026:18:33:26 +0000. */
function gatewayTime(epoch: number): string {
  const d = new Date(epoch);
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getUTCDate())}/${month}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

function buildContext(handlerPath: string): Context {
  const functionName = `logbook-local-${handlerPath.replaceAll('/', '-')}`;
  const start = Date.now();
  const unsupported = (): never => {
    throw new Error('not supported');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/[$LATEST]${functionName}`,
    // A WebSocket integration, like an HTTP one, times out at 29-30 s.
    getRemainingTimeInMillis: () => Math.max(0, start + 29_000 - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/**
 * The environment of the management API client when it talks to this emulator: its endpoint, and
 * dummy credentials and region when none are set (the SDK signs every request; the emulator ignores it).
 */
export function useLocalManagementApi(gateway: RunningWsGateway): void {
  process.env.WS_MANAGEMENT_ENDPOINT = gateway.managementEndpoint;
  process.env.AWS_REGION ??= 'us-east-1';
  // Node 20 is supported here; the SDK's notice about its future Node 22 requirement is noise on every local start.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  if (!process.env.AWS_ACCESS_KEY_ID) {
    process.env.AWS_ACCESS_KEY_ID = 'local';
    process.env.AWS_SECRET_ACCESS_KEY = 'local';
  }
}
