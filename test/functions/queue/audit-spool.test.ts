/**
 * The audit spool in AWS: an audit write the database refuses is sent, with its original timestamp,
 * to the work queue through the real @aws-sdk/client-sqs client (against a local SendMessage endpoint), and the queue
 * worker appends it once however often SQS delivers it; its last failed receive is counted permanently failed. The
 * worker takes a batch of jobs of different kinds, reports the ones that failed as batch item failures and runs each of
 * the others once, however often SQS delivers them.
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as worker } from '#functions/queue/worker.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { useApi } from '#test/support/api.ts';
import { type SqsStub, startSqsStub } from '#test/support/aws-stubs.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let sqs: SqsStub;
let tenant: Tenant;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  sqs = await startSqsStub();
  const env = {
    WORK_QUEUE_URL: sqs.queueUrl,
    AWS_ENDPOINT_URL_SQS: sqs.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  tenant = await createTenant(t.api, 'Queued Spool');
});
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  sqs?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
  vi.resetModules();
});

const context = { functionName: 'logbook-work', awsRequestId: 'r1', getRemainingTimeInMillis: () => 60_000 } as Context;

/** Invokes a worker handler as Lambda does, with its context. */
const invoke = (handler: typeof worker, event: SQSEvent) =>
  (handler as unknown as (event: SQSEvent, context: Context) => ReturnType<typeof worker>)(event, context);

/** The messages as Lambda's SQS event source hands them to the worker, on their `receive`th receive. */
const sqsEvent = (messages: SqsStub['messages'], receive = 1): SQSEvent => ({
  Records: messages.map((message) => ({
    messageId: message.messageId,
    receiptHandle: `handle-${message.messageId}`,
    body: message.body,
    attributes: {
      ApproximateReceiveCount: String(receive),
      SentTimestamp: String(Date.now()),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:logbook-work',
    awsRegion: 'us-east-1',
  })),
});

const rowsOf = (orgId: string, action: string) =>
  t.db.admin
    .query<{ seq: number; timestamp: Date; name: unknown }>(
      `SELECT seq, timestamp, coalesce(details->'after'->>'name', resource_name) AS name FROM audit_logs
        WHERE org_id = :orgId::uuid AND action = :action::text ORDER BY seq`,
      { orgId, action },
    )
    .then((r) => r.rows);

/**
 * Runs `work` while the API's role may not insert into `table` (the request itself still succeeds): audit_entries, the
 * trail; audit_intents, where a change writes its audit rows in its own transaction.
 */
async function withoutAuditInserts<T>(work: () => Promise<T>, table = 'audit_entries'): Promise<T> {
  await t.db.admin.query(`REVOKE INSERT ON ${table} FROM logbook_app`);
  try {
    return await work();
  } finally {
    await t.db.admin.query(`GRANT INSERT ON ${table} TO logbook_app`);
  }
}

const intentsOf = async (orgId: string) =>
  (
    await t.db.admin.query<{ count: number }>(
      'SELECT count(*)::int AS count FROM audit_intents WHERE org_id = :orgId::uuid',
      { orgId },
    )
  ).rows[0]!.count;

describe('the audit spool through the work queue', () => {
  it("sends a change's audit row the database refused to SQS and the worker appends it once, with its original timestamp", async () => {
    sqs.messages.length = 0;
    const before = Date.now();
    const reply = await withoutAuditInserts(
      () =>
        t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
          token: tenant.partnerToken,
          body: { name: 'Queued Renamed' },
        }),
      'audit_intents',
    );
    expect(reply.status).toBe(200);
    expect(await rowsOf(tenant.orgId, 'organization.update')).toEqual([]);
    expect(sqs.messages).toHaveLength(1);
    expect(sqs.messages[0]!.delaySeconds).toBe(0);
    expect(JSON.parse(sqs.messages[0]!.body)).toMatchObject({
      kind: 'audit.replay',
      spoolId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      row: { orgId: tenant.orgId, action: 'organization.update', timestamp: expect.any(String) },
    });

    await new Promise((resolve) => setTimeout(resolve, 50));
    const replayedAt = Date.now();
    expect(await invoke(worker, sqsEvent(sqs.messages))).toEqual({ batchItemFailures: [] });
    const rows = await rowsOf(tenant.orgId, 'organization.update');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.name).toBe('Queued Renamed');
    expect(rows[0]!.timestamp.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(rows[0]!.timestamp.getTime()).toBeLessThan(replayedAt);
    // SQS delivers at least once: the same message again (and a concurrent copy) adds nothing.
    await Promise.all([invoke(worker, sqsEvent(sqs.messages)), invoke(worker, sqsEvent(sqs.messages))]);
    expect(await rowsOf(tenant.orgId, 'organization.update')).toHaveLength(1);
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('keeps the audit rows of a committed change whose seal failed, and the worker seals them once when armed', async () => {
    sqs.messages.length = 0;
    const earlier = (await rowsOf(tenant.orgId, 'organization.update')).length;
    const before = Date.now();
    // The fault: the API's role may not seal for a while (the request itself still succeeds).
    await t.db.admin.query('REVOKE EXECUTE ON FUNCTION audit_intents_seal(jsonb) FROM logbook_app');
    let reply: Awaited<ReturnType<typeof t.api.request>>;
    try {
      reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
        token: tenant.partnerToken,
        body: { name: 'Sealed Late' },
      });
    } finally {
      await t.db.admin.query('GRANT EXECUTE ON FUNCTION audit_intents_seal(jsonb) TO logbook_app');
    }
    expect(reply.status).toBe(200);
    expect(await rowsOf(tenant.orgId, 'organization.update')).toHaveLength(earlier);
    // Committed with the change; the seal after the commit was refused, and armed the sweep.
    expect(await intentsOf(tenant.orgId)).toBe(1);
    expect(sqs.messages.map((message) => JSON.parse(message.body).kind)).toEqual(['audit.seal']);
    expect(sqs.messages[0]!.delaySeconds).toBe(30);

    const sweptAt = Date.now();
    // As SQS hands it over once its delay has passed: due now.
    const armed = sqsEvent(
      sqs.messages.map((message) => ({
        ...message,
        body: JSON.stringify({ ...JSON.parse(message.body), dueAt: sweptAt }),
      })),
    );
    expect(await invoke(worker, armed)).toEqual({ batchItemFailures: [] });
    const rows = await rowsOf(tenant.orgId, 'organization.update');
    expect(rows.slice(earlier).map((row) => row.name)).toEqual(['Sealed Late']);
    expect(rows[earlier]!.timestamp.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(rows[earlier]!.timestamp.getTime()).toBeLessThan(sweptAt);
    expect(await intentsOf(tenant.orgId)).toBe(0);
    // Delivered again, and twice at once: nothing more.
    await Promise.all([invoke(worker, armed), invoke(worker, armed)]);
    expect(await rowsOf(tenant.orgId, 'organization.update')).toHaveLength(earlier + 1);
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('in Lambda counts the row spooled, permanently failed on its last receive, and replayed after a redrive', async () => {
    sqs.messages.length = 0;
    // The modules as a Lambda loads them: metrics are written to stdout in the embedded metric format.
    vi.resetModules();
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'logbook-work');
    vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'LogbookTest');
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', undefined);
    vi.stubEnv('POWERTOOLS_DEV', undefined);
    // Outside tests, so that the seed's line is printed.
    vi.stubEnv('NODE_ENV', 'production');
    const writer = await import('#shared/audit/writer.ts');
    const { publishMetrics } = await import('#shared/observability/metrics.ts');
    const { appDb, closeAppDb } = await import('#shared/db/client.ts');
    const lambdaWorker = (await import('#functions/queue/worker.ts')).handler;
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const counted = () =>
      write.mock.calls
        .map(([chunk]) => String(chunk))
        .filter((text) => text.includes('"_aws"'))
        .flatMap((text) => {
          const line = JSON.parse(text) as { _aws: { CloudWatchMetrics: { Metrics: { Name: string }[] }[] } };
          return line._aws.CloudWatchMetrics[0]!.Metrics.map((metric) => metric.Name).filter((n) => n !== 'ColdStart');
        });
    try {
      await withoutAuditInserts(async () => {
        const audit = { db: appDb(), pending: [] as Promise<void>[] };
        writer.writeRouteAudit(audit, {
          orgId: tenant.orgId,
          action: 'organization.archive-report',
          resourceType: 'organization',
          resourceId: tenant.orgId,
          resourceName: 'Spooled In Lambda',
        });
        await writer.flushAudit(audit);
        publishMetrics();
        expect(counted()).toEqual(['AuditWriteFailures', 'AuditEventsSpooled']);
        // The seed's line stays.
        expect(error).toHaveBeenCalledWith(
          '[audit] Failed to write audit log:',
          'organization.archive-report',
          expect.anything(),
        );
        expect(sqs.messages).toHaveLength(1);

        // Its fifth receive fails too: SQS moves it to the dead-letter queue, and that is counted.
        write.mockClear();
        const result = await invoke(lambdaWorker, sqsEvent(sqs.messages, 5));
        expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: sqs.messages[0]!.messageId }] });
        expect(counted()).toEqual(['AuditEventsFailedPermanently']);
      });
      expect(await rowsOf(tenant.orgId, 'organization.archive-report')).toEqual([]);

      // A redrive from the dead-letter queue receives it afresh once the database takes it.
      write.mockClear();
      expect(await invoke(lambdaWorker, sqsEvent(sqs.messages, 1))).toEqual({ batchItemFailures: [] });
      expect(await invoke(lambdaWorker, sqsEvent(sqs.messages, 2))).toEqual({ batchItemFailures: [] });
      expect(counted()).toEqual(['AuditEventsReplayed']);
      const rows = await rowsOf(tenant.orgId, 'organization.archive-report');
      expect(rows.map((row) => row.name)).toEqual(['Spooled In Lambda']);
    } finally {
      write.mockRestore();
      error.mockRestore();
      await closeAppDb();
    }
  });
});

describe('the work queue worker with a mixed batch', () => {
  it('reports the jobs that failed as batch item failures and runs each of the others exactly once', async () => {
    const device = await enrollDevice(t.api, tenant, 'batch-host');
    const automation = await t.api.request('POST', '/api/v1/automations', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        name: 'Came online',
        triggers: [{ type: 'event', event: 'device.online' }],
        actions: [{ type: 'raise-alert', severity: 'low', title: 'Back online' }],
      },
    });
    expect(automation.status).toBe(201);
    // An audit row the database refused, spooled to the queue as a change's would be.
    sqs.messages.length = 0;
    const renamed = await withoutAuditInserts(
      () =>
        t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
          token: tenant.partnerToken,
          body: { name: 'Batch Renamed' },
        }),
      'audit_intents',
    );
    expect(renamed.status).toBe(200);
    const spooled = sqs.messages.filter((message) => JSON.parse(message.body).kind === 'audit.replay');
    expect(spooled).toHaveLength(1);
    const message = (messageId: string, body: unknown) => ({
      messageId,
      body: typeof body === 'string' ? body : JSON.stringify(body),
      delaySeconds: 0,
    });
    const dueAt = Date.now();
    const online = {
      kind: 'automations.event',
      dueAt,
      event: 'device.online',
      eventId: randomUUID(),
      deviceId: device.deviceId,
    };
    const batch = [
      message('replay', JSON.parse(spooled[0]!.body)),
      message('unknown-kind', { kind: 'nothing.here', dueAt }),
      message('online', online),
      message('refused', { kind: 'maintenance.start', dueAt, windowId: 'not-a-uuid', version: 1, key: 'k', at: dueAt }),
      message('not-json', '{"kind":'),
    ] as SqsStub['messages'];
    const failures = ['unknown-kind', 'refused', 'not-json'].map((itemIdentifier) => ({ itemIdentifier }));
    sqs.messages.length = 0;
    const result = await invoke(worker, sqsEvent(batch));
    expect(result.batchItemFailures).toEqual(expect.arrayContaining(failures));
    expect(result.batchItemFailures).toHaveLength(failures.length);

    const runsOf = async () =>
      (await t.api.request('GET', `/api/v1/automations/${automation.body.id}/runs`, { token: tenant.orgToken })).body
        .data as unknown[];
    const ranOnce = async () => {
      expect(await rowsOf(tenant.orgId, 'organization.update').then((rows) => rows.map((row) => row.name))).toContain(
        'Batch Renamed',
      );
      expect(
        (await rowsOf(tenant.orgId, 'organization.update')).filter((row) => row.name === 'Batch Renamed'),
      ).toHaveLength(1);
      expect(await runsOf()).toHaveLength(1);
      const alerts = await t.db.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM alerts WHERE device_id = :deviceId::uuid AND title = 'Back online'`,
        { deviceId: device.deviceId },
      );
      expect(alerts.rows[0]!.n).toBe(1);
    };
    await ranOnce();
    // SQS receives the failed ones again (they fail again), and, delivering at least once, the whole batch: the
    // jobs that ran run nothing twice.
    const again = await invoke(
      worker,
      sqsEvent(batch.filter((each) => failures.some((f) => f.itemIdentifier === each.messageId))),
    );
    expect(again.batchItemFailures).toHaveLength(failures.length);
    expect((await invoke(worker, sqsEvent(batch))).batchItemFailures).toHaveLength(failures.length);
    await ranOnce();
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });
});
