import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { logger } from '../logger.ts';
import { type BusinessMetric, countMetric, metrics, publishMetrics } from './metrics.ts';
import { inLambda } from './service.ts';
import { tracer } from './tracer.ts';

// Any event and context: the wrapped handler keeps its own types.
type LambdaHandler = (event: never, context: never) => Promise<unknown>;

const captureLambdaHandler = tracer && (await import('@aws-lambda-powertools/tracer/middleware')).captureLambdaHandler;
const injectLambdaContext = inLambda && (await import('@aws-lambda-powertools/logger/middleware')).injectLambdaContext;

/** Replies counted by the code of their error envelope (docs/system.md), with their statuses. */
const countedErrors: Record<string, { status: number; metric: BusinessMetric }> = {
  DEVICE_OFFLINE: { status: 409, metric: 'LiveQueryDeviceOffline' },
  AGENT_TIMEOUT: { status: 504, metric: 'LiveQueryTimeouts' },
  AGENT_BAD_RESPONSE: { status: 502, metric: 'LiveQueryBadResponses' },
  RATE_LIMITED: { status: 429, metric: 'IngestRateLimited' },
  UNAVAILABLE: { status: 503, metric: 'DatabaseUnavailable' },
  INTERNAL: { status: 500, metric: 'UnhandledErrors' },
};
const countedStatuses = new Set(Object.values(countedErrors).map((counted) => counted.status));

/** The metric of a reply whose error envelope has a counted code (only those statuses' bodies are read). */
export function replyMetric(result: unknown): BusinessMetric | undefined {
  const reply = result as { statusCode?: unknown; body?: unknown } | null | undefined;
  if (typeof reply?.statusCode !== 'number' || !countedStatuses.has(reply.statusCode) || typeof reply.body !== 'string')
    return undefined;
  try {
    const code = (JSON.parse(reply.body) as { error?: { code?: unknown } } | null)?.error?.code;
    const counted = typeof code === 'string' ? countedErrors[code] : undefined;
    return counted?.status === reply.statusCode ? counted.metric : undefined;
  } catch {
    return undefined;
  }
}

/** The route of an HTTP API (`GET /api/v1/…`) or WebSocket API (`$connect`) event. */
function routeOf(event: unknown): string | undefined {
  const e = event as { routeKey?: unknown; requestContext?: { routeKey?: unknown } } | null | undefined;
  const key = e?.routeKey ?? e?.requestContext?.routeKey;
  return typeof key === 'string' ? key : undefined;
}

/** Cold start and route on the trace, in the metrics and on each log line; the invocation's counts published when it ends. */
const observeInvocation: MiddlewareObj<unknown, unknown, Error, Context> = {
  before: (request) => {
    const route = routeOf(request.event);
    if (route) {
      tracer?.putAnnotation('route', route);
      logger.appendKeys({ route });
    }
    metrics?.captureColdStartMetric(request.context.functionName);
  },
  after: (request) => {
    const metric = replyMetric(request.response);
    if (metric) countMetric(metric);
    publishMetrics();
  },
  onError: () => {
    publishMetrics();
  },
};

/**
 * A Lambda handler with Powertools Logger (request id, cold start and route on every line, reset after each
 * invocation), Tracer (the handler's X-Ray subsegment, cold start, service and route annotations; never the
 * response, which carries tenants' data) and Metrics (ColdStart, and the counts of the invocation). Outside Lambda
 * it is the handler itself: `npm start` and the tests call the handlers unwrapped.
 */
export function observedHandler<Handler extends LambdaHandler>(handler: Handler): Handler {
  if (!injectLambdaContext) return handler;
  const chain = middy<unknown, unknown, Error, Context>(
    handler as unknown as (event: unknown, context: Context) => Promise<unknown>,
  );
  chain.use(injectLambdaContext(logger, { resetKeys: true }));
  if (tracer && captureLambdaHandler) chain.use(captureLambdaHandler(tracer, { captureResponse: false }));
  return chain.use(observeInvocation) as unknown as Handler;
}
