/**
 * Local emulation of an API Gateway HTTP API (payload format 2.0): routes requests
 * from the route table to the same Lambda handlers the cloud runs, with the events,
 * contexts, limits and error answers API Gateway produces.
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { batchedJobKinds, runJob, runJobBatch } from '#functions/queue/jobs.ts';
import { type Handler, httpHandler } from '#shared/http/handler.ts';
import type { DeclaredRoute } from '#shared/http/route.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { runJobsLocally } from '#shared/queue/work-queue.ts';
import { type AccessLogSink, httpAccessLogLine } from './access-log.ts';

export interface HttpGatewayOptions {
  port: number;
  /** Interface to listen on; without one, every interface (Node takes :: where the host has IPv6, else 0.0.0.0). */
  host?: string;
  /**
   * What answers each route key: a declared route (functions/<domain>/routes.ts), answered by httpHandler around its
   * domain call as its Lambda answers it, or a handler module under functions/ (`{ handler: 'system/not-found' }`).
   */
  routes: Record<string, LocalRoute>;
  /** The handler of API Gateway's $default route: what answers a request no route (and no site file) takes. */
  defaultRoute?: { handler: string };
  /** Resolves a handler module path (under functions/, no extension) to its handler; defaults to importing it. */
  loadHandler?: (handlerPath: string) => Promise<Handler>;
  /** Receives the stage's access-log line of each request (infra/aws/access-log-format.ts), as its log group would. */
  accessLog?: AccessLogSink;
  /** Static files by URL path (the audit viewer), answered to GET and HEAD when no route matches. */
  site?: ReadonlyMap<string, StaticFile>;
}

// biome-ignore lint/suspicious/noExplicitAny: a table holds routes of every shape; httpHandler checks each where it is declared.
export type LocalRoute = DeclaredRoute<any> | { handler: string };

export interface StaticFile {
  body: Uint8Array;
  headers: Record<string, string>;
}

export interface RunningHttpGateway {
  port: number;
  url: string;
  close(): Promise<void>;
}

/** API Gateway's payload limit for HTTP APIs. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** API Gateway's integration timeout for HTTP APIs, which bounds the Lambda's remaining time. */
const TIMEOUT_MS = 30_000;

type Segment = { kind: 'literal'; value: string } | { kind: 'param'; name: string } | { kind: 'greedy'; name: string };

interface CompiledRoute {
  routeKey: string;
  method: string;
  segments: Segment[];
  /** The handler module, or the declared route's operation: it names the local function. */
  handler: string;
}

interface RouteMatch {
  route: CompiledRoute;
  pathParameters: Record<string, string>;
}

export async function startHttpGateway(options: HttpGatewayOptions): Promise<RunningHttpGateway> {
  // Background jobs run in this process, as the queue worker runs them in AWS (shared/queue/work-queue.ts).
  runJobsLocally(runJob, {
    kinds: batchedJobKinds,
    run: async (jobs) => {
      await runJobBatch(jobs);
    },
  });
  const routes = Object.entries(options.routes).map(([routeKey, route]) =>
    compileRoute(routeKey, 'handler' in route ? route.handler : route.operationId),
  );
  const defaultRoute: CompiledRoute | undefined = options.defaultRoute && {
    routeKey: '$default',
    method: 'ANY',
    segments: [],
    handler: options.defaultRoute.handler,
  };
  const load = options.loadHandler ?? importHandler;
  const handlers = new Map<string, Promise<Handler>>();
  const handlerFor = (route: CompiledRoute): Promise<Handler> => {
    const declared = options.routes[route.routeKey];
    // Wrapped as the stack's entry wraps it: Powertools in Lambda's environment, the handler itself elsewhere.
    const handler =
      handlers.get(route.handler) ??
      (declared && 'handle' in declared
        ? Promise.resolve(httpHandler(declared, declared.handle))
        : load(route.handler)
      ).then((loaded) => observedHandler(loaded));
    handlers.set(route.handler, handler);
    return handler;
  };
  // One "execution environment" per gateway: its log stream suffix, as Lambda names them.
  const instanceId = randomBytes(16).toString('hex');

  // The requests being answered: closing waits for their handlers, as a Lambda's invocation runs to its end whether
  // or not its caller is still there, so nothing a request started outlives the gateway.
  const answering = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    const answered = serve(req, res)
      .catch((error: unknown) => {
        console.error(error);
        if (!res.headersSent) reply(res, 500, { message: 'Internal Server Error' });
        else res.destroy();
      })
      .finally(() => answering.delete(answered));
    answering.add(answered);
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const start = Date.now();
    const requestId = randomUUID();
    res.setHeader('apigw-requestid', requestId);
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
    const rawQueryString = queryAt === -1 ? '' : target.slice(queryAt + 1);
    const method = (req.method ?? 'GET').toUpperCase();
    // The access-log line once the answer is sent, whatever answered it (a route, the site, a refusal).
    let routeKey: string | undefined;
    let integrationError: string | undefined;
    const { accessLog } = options;
    if (accessLog)
      res.once('finish', () =>
        accessLog(
          httpAccessLogLine({
            requestId,
            requestTimeEpoch: start,
            routeKey,
            httpMethod: method,
            path: rawPath,
            status: res.statusCode,
            responseLatency: Date.now() - start,
            integrationErrorMessage: integrationError,
            'identity.sourceIp': (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''),
          }),
        ),
      );

    let match = matchRoute(routes, method, rawPath);
    if (!match) {
      // Routes come first: the site never shadows an API path.
      const file = method === 'GET' || method === 'HEAD' ? options.site?.get(rawPath) : undefined;
      if (file) return serveFile(res, file, method);
      if (!defaultRoute) return reply(res, 404, { message: 'Not Found' });
      match = { route: defaultRoute, pathParameters: {} };
    }
    routeKey = match.route.routeKey;

    const body = await readBody(req);
    if (body === 'too-large') {
      // Stop reading: the rest of the upload is never buffered, and the connection is not reused. The answer is
      // the service's own envelope, as for a body beyond a route's limit (docs/system.md "Conventions").
      req.pause();
      return reply(
        res,
        413,
        {
          error: {
            code: 'PAYLOAD_TOO_LARGE',
            message: `Request body exceeds the limit of ${MAX_BODY_BYTES} bytes`,
            details: { maxBytes: MAX_BODY_BYTES },
          },
        },
        { connection: 'close' },
      );
    }

    const event = buildEvent({ req, match, rawPath, rawQueryString, method, body, requestId, start });
    const context = buildContext(match.route.handler, start, instanceId);
    let result: unknown;
    try {
      const handler = await handlerFor(match.route);
      result = await handler(event, context);
    } catch (error) {
      // As API Gateway does: the client gets a bare 500, the error goes to the function's log only.
      console.error(`[${context.functionName}] ${requestId}`, error);
      integrationError = 'The Lambda function returned an error';
      return reply(res, 500, { message: 'Internal Server Error' });
    }
    writeResult(res, result);
  }

  // Idle keep-alive connections stay open for a minute, as behind API Gateway; Node's 5 s default races a client
  // that reuses the connection just then (a reset request), most often in a test whose process was busy.
  server.keepAliveTimeout = 60_000;
  const { host } = options;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const shownHost =
    host === undefined || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;

  return {
    port,
    url: `http://${shownHost}:${port}`,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      await Promise.all(answering);
    },
  };
}

/** The default loader: the handler module's exported `handler`, loaded once by Node's module cache. */
async function importHandler(handlerPath: string): Promise<Handler> {
  const module = (await import(new URL(`../../functions/${handlerPath}.ts`, import.meta.url).href)) as {
    handler?: unknown;
  };
  if (typeof module.handler !== 'function') throw new Error(`functions/${handlerPath}.ts exports no handler`);
  return module.handler as Handler;
}

function compileRoute(routeKey: string, handler: string): CompiledRoute {
  const [method, path, ...rest] = routeKey.split(' ');
  if (!method || !path?.startsWith('/') || rest.length > 0) throw new Error(`Invalid route key: ${routeKey}`);
  const segments = path
    .slice(1)
    .split('/')
    .map((part, i, all): Segment => {
      const param = /^\{([^{}+]+)(\+?)\}$/.exec(part);
      if (!param) return { kind: 'literal', value: part };
      if (!param[2]) return { kind: 'param', name: param[1]! };
      if (i !== all.length - 1) throw new Error(`Greedy parameter must be last: ${routeKey}`);
      return { kind: 'greedy', name: param[1]! };
    });
  return { routeKey, method: method.toUpperCase(), segments, handler };
}

const rank = { literal: 0, param: 1, greedy: 2 } as const;

/** True when `a` is more specific than `b`: literal beats `{param}` beats `{proxy+}`, segment by segment, then a method beats ANY. */
function moreSpecific(a: CompiledRoute, b: CompiledRoute): boolean {
  const length = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < length; i++) {
    const ra = a.segments[i] ? rank[a.segments[i]!.kind] : -1;
    const rb = b.segments[i] ? rank[b.segments[i]!.kind] : -1;
    if (ra !== rb) return ra < rb;
  }
  return a.method !== 'ANY' && b.method === 'ANY';
}

function matchRoute(routes: CompiledRoute[], method: string, rawPath: string): RouteMatch | undefined {
  if (!rawPath.startsWith('/')) return undefined;
  const parts = rawPath.slice(1).split('/').map(safeDecode);
  let best: RouteMatch | undefined;
  for (const route of routes) {
    if (route.method !== method && route.method !== 'ANY') continue;
    const pathParameters = matchSegments(route.segments, parts);
    if (pathParameters && (!best || moreSpecific(route, best.route))) best = { route, pathParameters };
  }
  return best;
}

/**
 * The route key API Gateway chooses for a method and raw path (the most specific match), or undefined: for clients
 * that hold a reply to its route's schema (test/support/api.ts).
 */
export function routeMatcher(routeKeys: readonly string[]): (method: string, rawPath: string) => string | undefined {
  const compiled = routeKeys.map((routeKey) => compileRoute(routeKey, ''));
  return (method, rawPath) => matchRoute(compiled, method.toUpperCase(), rawPath)?.route.routeKey;
}

function matchSegments(segments: Segment[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (const [i, segment] of segments.entries()) {
    const part = parts[i];
    if (part === undefined) return undefined;
    if (segment.kind === 'literal') {
      if (part !== segment.value) return undefined;
    } else if (segment.kind === 'param') {
      if (part === '') return undefined;
      params[segment.name] = part;
    } else {
      const rest = parts.slice(i).join('/');
      if (rest === '') return undefined;
      params[segment.name] = rest;
      return params;
    }
  }
  return parts.length === segments.length ? params : undefined;
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Reads the body up to API Gateway's limit; beyond it, stops and reports 'too-large' without reading further. */
function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) return Promise.resolve('too-large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        cleanup();
        resolve('too-large');
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const cleanup = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}

/**
 * Content types API Gateway passes as text; any other body (or none declared) arrives base64-encoded, and so does
 * a text body that is not UTF-8, so the handler sees the bytes as sent (shared/http/utf8-body.ts).
 */
function isTextual(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    /^application\/[^/]+\+json$/.test(type) ||
    type === 'application/x-www-form-urlencoded' ||
    type === 'application/xml'
  );
}

/** API Gateway's `requestContext.time`, e.g. 21/Nov/2026:18:33:26 +0000. */
function gatewayTime(epoch: number): string {
  const d = new Date(epoch);
  const month = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][d.getUTCMonth()];
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getUTCDate())}/${month}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

function buildEvent(input: {
  req: IncomingMessage;
  match: RouteMatch;
  rawPath: string;
  rawQueryString: string;
  method: string;
  body: Buffer;
  requestId: string;
  start: number;
}): APIGatewayProxyEventV2 {
  const { req, match, rawPath, rawQueryString, method, body, requestId, start } = input;
  const sourceIp = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const port = req.socket.localPort ?? 0;

  // rawHeaders keeps every repeat (req.headers drops some); API Gateway joins repeats with ','.
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (name === 'cookie')
      cookies.push(
        ...value
          .split(';')
          .map((c) => c.trim())
          .filter(Boolean),
      );
    else headers[name] = name in headers ? `${headers[name]},${value}` : value;
  }
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${sourceIp}` : sourceIp;
  headers['x-forwarded-port'] = String(port);
  headers['x-forwarded-proto'] = 'http';

  const query: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(rawQueryString)) {
    query[key] = key in query ? `${query[key]},${value}` : value;
  }

  const domainName = headers.host ?? `127.0.0.1:${port}`;
  const textual = isTextual(headers['content-type']) && isUtf8(body);
  const hasBody = body.length > 0;
  return {
    version: '2.0',
    routeKey: match.route.routeKey,
    rawPath,
    rawQueryString,
    ...(cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(rawQueryString !== '' ? { queryStringParameters: query } : {}),
    ...(Object.keys(match.pathParameters).length > 0 ? { pathParameters: match.pathParameters } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName,
      domainPrefix: domainName.split('.')[0]!,
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp, userAgent: headers['user-agent'] ?? '' },
      requestId,
      routeKey: match.route.routeKey,
      stage: '$default',
      time: gatewayTime(start),
      timeEpoch: start,
    },
    ...(hasBody ? { body: textual ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: hasBody && !textual,
  };
}

function buildContext(handlerPath: string, start: number, instanceId: string): Context {
  const functionName = `logbook-local-${handlerPath.replaceAll('/', '-')}`;
  const day = new Date(start).toISOString().slice(0, 10).replaceAll('-', '/');
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
    logStreamName: `${day}/[$LATEST]${instanceId}`,
    getRemainingTimeInMillis: () => Math.max(0, start + TIMEOUT_MS - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

/** Writes a format 2.0 result: a structured response when it has statusCode, otherwise 200 with the value as JSON. */
function writeResult(res: ServerResponse, result: unknown): void {
  if (typeof result !== 'object' || result === null || !('statusCode' in result)) {
    reply(res, 200, result ?? null);
    return;
  }
  const { statusCode, headers = {}, cookies, body, isBase64Encoded } = result as APIGatewayProxyStructuredResultV2;
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) out[name] = String(value);
  if (cookies?.length) out['set-cookie'] = cookies;
  const payload = body === undefined ? undefined : isBase64Encoded ? Buffer.from(body, 'base64') : body;
  res.writeHead(statusCode ?? 200, out);
  res.end(payload);
}

function serveFile(res: ServerResponse, file: StaticFile, method: string): void {
  res.writeHead(200, { ...file.headers, 'content-length': String(file.body.byteLength) });
  res.end(method === 'HEAD' ? undefined : file.body);
}

/** A JSON answer of the gateway itself (errors, or a handler value without statusCode). */
function reply(res: ServerResponse, status: number, value: unknown, extra: OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...extra });
  res.end(JSON.stringify(value));
}
