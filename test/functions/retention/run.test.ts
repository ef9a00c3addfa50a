import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler } from '#functions/retention/run.ts';
import { anchorKeyId, generateAnchorKey } from '#shared/audit/anchor-signing.ts';
import { closeAuditAdminDb } from '#shared/db/client.ts';
import { logger } from '#shared/logger.ts';
import { appendAudit, readChain, tamper } from '#test/shared/audit/audit-rows.ts';
import { startStubs } from '#test/support/aws-stubs.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

let db: TestDatabase;
/** The worker's one signing key: the cuts and anchors of every test here are checked against it. */
const workerKey = generateAnchorKey();
beforeAll(async () => {
  db = await createTestDatabase();
  process.env.AUDIT_ADMIN_DATABASE_URL = db.urls.auditAdmin;
  // Every cut is signed: the worker's key, as its secret provides it in AWS.
  process.env.AUDIT_ANCHOR_PRIVATE_KEY = workerKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  await closeAuditAdminDb();
});
afterAll(async () => {
  await closeAuditAdminDb();
  delete process.env.AUDIT_ADMIN_DATABASE_URL;
  delete process.env.AUDIT_ANCHOR_PRIVATE_KEY;
  await db.close();
});

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

async function organization(retentionDays: number, ages: number[]): Promise<string> {
  const { rows } = await db.admin.query<{ id: string }>(
    `WITH partner AS (INSERT INTO partners (name) VALUES ('Scheduled MSP') RETURNING id)
     INSERT INTO organizations (partner_id, name) SELECT id, 'Scheduled Ltd' FROM partner RETURNING id::text AS id`,
  );
  const orgId = rows[0]!.id;
  await db.admin.query(
    'INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, :days::int)',
    { orgId, days: retentionDays },
  );
  await appendAudit(
    db.admin,
    ages.map((age) => ({ orgId, timestamp: daysAgo(age) })),
  );
  return orgId;
}

/** The EventBridge scheduled event (its shape; the worker reads none of it). */
const scheduledEvent = {
  version: '0',
  id: 'e1',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  time: new Date().toISOString(),
  region: 'eu-central-1',
  resources: [],
  detail: {},
};

describe('the retention Lambda (EventBridge daily)', () => {
  it('rehearses when invoked with dryRun, deleting nothing', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler({ dryRun: true })).toMatchObject({ dryRun: true, rowsDeleted: 2, pruned: 1, failed: 0 });
    expect(await readChain(db.admin, orgId)).toHaveLength(3);
  });

  it('prunes on the scheduled event as logbook_audit_admin, and answers what it did (the organization above too)', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler(scheduledEvent)).toMatchObject({ dryRun: false, rowsDeleted: 4, pruned: 2, failed: 0 });
    // 3: the recent row; 4: the retention event; 5: the integrity watch's record of the first anchor.
    expect((await readChain(db.admin, orgId)).map((row) => row.seq)).toEqual([3, 4, 5]);
  });

  it('prunes agent diagnostic logs and device event logs past their default windows in the same run', async () => {
    const { rows } = await db.admin.query<{ orgId: string; deviceId: string }>(
      `WITH p AS (INSERT INTO partners (name) VALUES ('Logs MSP') RETURNING id),
            o AS (INSERT INTO organizations (partner_id, name) SELECT id, 'Logs Ltd' FROM p RETURNING id),
            s AS (INSERT INTO sites (org_id, name) SELECT id, 'S' FROM o RETURNING id, org_id),
            d AS (INSERT INTO devices (org_id, site_id, hostname) SELECT org_id, id, 'h' FROM s RETURNING id, org_id)
       SELECT org_id AS "orgId", id AS "deviceId" FROM d`,
    );
    const { orgId, deviceId } = rows[0]!;
    for (const age of [31, 1])
      await db.admin.query(
        `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message)
         VALUES (:deviceId::uuid, :orgId::uuid, :at::timestamptz, 'info', 'svc', 'm')`,
        { deviceId, orgId, at: daysAgo(age) },
      );
    await db.admin.query(
      `INSERT INTO device_event_logs (device_id, org_id, timestamp, level, category, source, message)
       VALUES (:deviceId::uuid, :orgId::uuid, :at::timestamptz, 'error', 'system', 'Disk', 'm')`,
      { deviceId, orgId, at: daysAgo(91) },
    );
    expect(await handler(scheduledEvent)).toMatchObject({ agentLogsDeleted: 1, eventLogsDeleted: 1 });
    const { rows: actions } = await db.admin.query<{ action: string }>(
      `SELECT action FROM audit_logs WHERE org_id = :orgId::uuid AND action LIKE '%.prune' ORDER BY action`,
      { orgId },
    );
    expect(actions.map((row) => row.action)).toEqual(['agent_logs.prune', 'device_event_logs.prune']);
  });

  it('stops between batches before the Lambda deadline, and says so', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler(scheduledEvent, { getRemainingTimeInMillis: () => 30_000 })).toMatchObject({
      stopped: true,
      rowsDeleted: 0,
    });
    expect(await readChain(db.admin, orgId)).toHaveLength(3);
  });

  it('refuses an invocation whose asOf is no ISO 8601 instant', async () => {
    await expect(handler({ asOf: 'tomorrow' })).rejects.toThrow();
  });

  it('signs its anchors with the key of its secret, read once when the function starts', async () => {
    const key = workerKey;
    const secretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:anchor-key-AbCdEf';
    const stubs = await startStubs(
      { [secretArn]: key.export({ type: 'pkcs8', format: 'pem' }).toString() },
      { [secretArn]: ['GetSecretValue'] },
    );
    vi.resetModules();
    for (const [name, value] of Object.entries({
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: stubs.secretsManagerUrl,
      AUDIT_ANCHOR_PRIVATE_KEY_ARN: secretArn,
    }))
      vi.stubEnv(name, value);
    vi.stubEnv('AUDIT_ANCHOR_PRIVATE_KEY', undefined);
    const started = await import('#functions/retention/run.ts');
    const client = await import('#shared/db/client.ts');
    try {
      expect(stubs.calls).toEqual([{ operation: 'GetSecretValue', secretId: secretArn }]);
      await organization(7, [30, 1]);
      await started.handler(scheduledEvent);
      const keyIds = (
        await db.admin.query<{ keyId: string }>('SELECT DISTINCT key_id AS "keyId" FROM audit_anchors')
      ).rows.map((row) => row.keyId);
      expect(keyIds).toEqual([anchorKeyId(createPublicKey(key))]);
    } finally {
      await client.closeAuditAdminDb();
      vi.unstubAllEnvs();
      stubs.close();
    }
  });

  it("verifies the integrity watch's queued jobs of older rows (SQS), reporting a break in the log, not as a retry", async () => {
    const orgId = await organization(3650, [9, 8, 7, 6, 5]);
    const message = (ranges: { first: number; last: number }[]) => ({
      messageId: `m-${ranges[0]!.first}`,
      body: JSON.stringify({ kind: 'audit.verify-stripes', orgId, ranges, rows: 2, dueAt: Date.now() }),
    });
    const intact = await handler({ Records: [message([{ first: 1, last: 2 }])] });
    expect(intact).toEqual({ batchItemFailures: [] });
    const chain = await readChain(db.admin, orgId);
    await tamper(db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: chain[3]!.id }),
    );
    const error = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    expect(await handler({ Records: [message([{ first: 1, last: 2 }]), message([{ first: 4, last: 5 }])] })).toEqual({
      batchItemFailures: [],
    });
    expect(error).toHaveBeenCalledTimes(1);
    expect(error).toHaveBeenCalledWith(
      expect.stringContaining('broken'),
      expect.objectContaining({ orgId, seq: 4, kind: 'altered' }),
    );
    error.mockRestore();
  });
});
