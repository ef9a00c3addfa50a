/**
 * Powertools Metrics and Tracer around a Lambda handler (shared/observability): in Lambda, the embedded-metric-format
 * lines of an invocation on stdout; elsewhere (`npm start`, tests) neither package is loaded and nothing is printed.
 */
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';

type Observability = typeof import('#shared/observability/handler.ts') &
  typeof import('#shared/observability/metrics.ts') &
  typeof import('#shared/observability/tracer.ts') &
  typeof import('#shared/logger.ts');

/** The modules as a process with this environment loads them. */
async function load(env: Record<string, string | undefined>): Promise<Observability> {
  vi.resetModules();
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  return {
    ...(await import('#shared/observability/handler.ts')),
    ...(await import('#shared/observability/metrics.ts')),
    ...(await import('#shared/observability/tracer.ts')),
    ...(await import('#shared/logger.ts')),
  };
}

const inLambda = {
  AWS_LAMBDA_FUNCTION_NAME: 'logbook-audit',
  AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
  POWERTOOLS_SERVICE_NAME: 'logbook-test',
  POWERTOOLS_METRICS_NAMESPACE: 'LogbookTest',
  POWERTOOLS_METRICS_DISABLED: undefined,
  POWERTOOLS_DEV: undefined,
};
const context = {
  functionName: 'logbook-audit',
  awsRequestId: 'r1',
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;
const envelope = (statusCode: number, code: string) => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ error: { code, message: 'x' } }),
});

/** The EMF documents the invocations write to stdout. */
function captureEmf(): { lines: () => Record<string, any>[] } {
  const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  return {
    lines: () =>
      write.mock.calls
        .map(([chunk]) => String(chunk))
        .filter((text) => text.includes('"_aws"'))
        .map((text) => JSON.parse(text) as Record<string, any>),
  };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  vi.resetModules();
});

describe('observability outside Lambda', () => {
  it('loads neither Metrics nor Tracer, wraps nothing and prints nothing', async () => {
    const o = await load({ AWS_LAMBDA_FUNCTION_NAME: undefined });
    expect(o.metrics).toBeUndefined();
    expect(o.tracer).toBeUndefined();
    const handler = async () => envelope(504, 'AGENT_TIMEOUT');
    expect(o.observedHandler(handler)).toBe(handler);
    const client = { send: () => undefined };
    expect(o.traced(client)).toBe(client);
    const emf = captureEmf();
    o.countMetric('AuditEventsWritten');
    o.publishMetrics();
    expect(emf.lines()).toEqual([]);
  });
});

describe('observability in Lambda', () => {
  it('publishes the cold start once, and the counts of each invocation in the configured namespace, with the service dimension', async () => {
    const o = await load(inLambda);
    const emf = captureEmf();
    const handler = o.observedHandler(async (_event: unknown, _context: Context) => {
      o.countMetric('AgentLogsStored', 250);
      return { statusCode: 200, body: '{"received":250}' };
    });
    await handler({ routeKey: 'POST /api/v1/agents/{id}/logs' }, context);
    await handler({ routeKey: 'POST /api/v1/agents/{id}/logs' }, context);
    const lines = emf.lines();
    const metricNames = (line: Record<string, any>) =>
      line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name);
    expect(lines.map(metricNames)).toEqual([['ColdStart'], ['AgentLogsStored'], ['AgentLogsStored']]);
    expect(lines[0]).toMatchObject({ ColdStart: 1, function_name: 'logbook-audit', service: 'logbook-test' });
    expect(lines[1]).toMatchObject({
      AgentLogsStored: 250,
      service: 'logbook-test',
      _aws: { CloudWatchMetrics: [{ Namespace: 'LogbookTest', Dimensions: [['service']] }] },
    });
  });

  it('counts live-query outcomes, exhausted budgets and failures by the error code of the reply', async () => {
    const o = await load(inLambda);
    const emf = captureEmf();
    const replies = [
      envelope(409, 'DEVICE_OFFLINE'),
      envelope(504, 'AGENT_TIMEOUT'),
      envelope(502, 'AGENT_BAD_RESPONSE'),
      envelope(429, 'RATE_LIMITED'),
      envelope(503, 'UNAVAILABLE'),
      envelope(500, 'INTERNAL'),
    ];
    for (const reply of replies)
      await o.observedHandler(async (_event: unknown, _context: Context) => reply)(
        { requestContext: { routeKey: '$default' } },
        context,
      );
    const counted = emf
      .lines()
      .flatMap((line) => line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name))
      .filter((name: string) => name !== 'ColdStart');
    expect(counted).toEqual([
      'LiveQueryDeviceOffline',
      'LiveQueryTimeouts',
      'LiveQueryBadResponses',
      'IngestRateLimited',
      'DatabaseUnavailable',
      'UnhandledErrors',
    ]);
  });

  it('writes no metric line (and no warning) for an invocation that counted nothing, nor for an ordinary 4xx', async () => {
    const o = await load(inLambda);
    const emf = captureEmf();
    const warn = vi.spyOn(console, 'warn');
    const handler = o.observedHandler(async (_event: unknown, _context: Context) => envelope(404, 'NOT_FOUND'));
    await handler({ routeKey: 'GET /api/v1/audit-logs/{id}' }, context);
    await handler({ routeKey: 'GET /api/v1/audit-logs/{id}' }, context);
    expect(
      emf
        .lines()
        .map((line) =>
          Object.keys(line).filter((key) => key !== '_aws' && key !== 'service' && key !== 'function_name'),
        ),
    ).toEqual([['ColdStart']]);
    expect(warn).not.toHaveBeenCalled();
  });

  it('publishes what was counted when the handler throws, and rethrows', async () => {
    const o = await load(inLambda);
    const emf = captureEmf();
    const handler = o.observedHandler(async (_event: unknown, _context: Context) => {
      o.countMetric('AuditRowsPruned', 5);
      throw new Error('retention failed for 1 organization(s)');
    });
    await expect(handler({}, context)).rejects.toThrow('retention failed');
    expect(emf.lines().at(-1)).toMatchObject({ AuditRowsPruned: 5 });
  });

  it('stays silent when POWERTOOLS_METRICS_DISABLED is true', async () => {
    const o = await load({ ...inLambda, POWERTOOLS_METRICS_DISABLED: 'true' });
    const emf = captureEmf();
    await o.observedHandler(async (_event: unknown, _context: Context) => {
      o.countMetric('AuditEventsWritten');
      return envelope(504, 'AGENT_TIMEOUT');
    })({}, context);
    expect(emf.lines()).toEqual([]);
  });

  it('stamps every log line of an invocation with its request id, cold start and route, and forgets the route after it', async () => {
    const o = await load(inLambda);
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const logged = () =>
      [...stdout.mock.calls, ...stderr.mock.calls]
        .map(([chunk]) => String(chunk))
        .filter((text) => text.includes('"message":"invocation'))
        .map((text) => JSON.parse(text) as Record<string, unknown>);
    const handler = o.observedHandler(async (_event: unknown, _context: Context) => {
      o.logger.warn('invocation line');
      return { statusCode: 204 };
    });
    await handler({ routeKey: 'GET /api/v1/audit-logs' }, context);
    await handler({}, { ...context, awsRequestId: 'r2' });
    o.logger.warn('invocation over');
    const [first, second, after] = logged();
    expect(first).toMatchObject({ function_request_id: 'r1', cold_start: true, route: 'GET /api/v1/audit-logs' });
    expect(second).toMatchObject({ function_request_id: 'r2', cold_start: false });
    expect(second).not.toHaveProperty('route');
    expect(after).not.toHaveProperty('route');
  });

  it('has a Tracer for the service, which X-Ray enables only in a Lambda execution environment', async () => {
    const o = await load({ ...inLambda, AWS_EXECUTION_ENV: undefined });
    expect(o.tracer).toBeDefined();
    expect(o.tracer!.isTracingEnabled()).toBe(false);
    const client = { send: () => undefined, middlewareStack: { add: () => undefined, remove: () => undefined } };
    expect(o.traced(client)).toBe(client);
    expect(
      await o.observedHandler(async (_event: unknown, _context: Context) => ({ statusCode: 204 }))(
        { routeKey: 'GET /api/v1/health' },
        context,
      ),
    ).toEqual({ statusCode: 204 });
  });
});

describe('the metric of a reply', async () => {
  const { replyMetric } = await import('#shared/observability/handler.ts');

  it('is read only from a counted status with its own code', () => {
    expect(replyMetric(envelope(409, 'DEVICE_OFFLINE'))).toBe('LiveQueryDeviceOffline');
    expect(replyMetric(envelope(409, 'SITE_NOT_EMPTY'))).toBeUndefined();
    expect(replyMetric(envelope(400, 'DEVICE_OFFLINE'))).toBeUndefined();
    expect(replyMetric({ statusCode: 504, body: 'not json' })).toBeUndefined();
    expect(replyMetric({ statusCode: 200, body: '{}' })).toBeUndefined();
    expect(replyMetric(undefined)).toBeUndefined();
  });
});
