import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/retention/run.ts';
import { closeAuditAdminDb } from '#shared/db/client.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { appendAudit, readChain } from '#test/shared/audit/audit-rows.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  process.env.AUDIT_ADMIN_DATABASE_URL = db.urls.auditAdmin;
  await closeAuditAdminDb();
});
afterAll(async () => {
  await closeAuditAdminDb();
  delete process.env.AUDIT_ADMIN_DATABASE_URL;
  await db.close();
});

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

async function organization(retentionDays: number, ages: number[]): Promise<string> {
  const { rows } = await db.admin.query<{ id: string }>(
    `WITH partner AS (INSERT INTO partners (name) VALUES ('Scheduled MSP') RETURNING id)
     INSERT INTO organizations (partner_id, name) SELECT id, 'Scheduled Ltd' FROM partner RETURNING id::text AS id`,
  );
  const orgId = rows[0]!.id;
  await db.admin.query('INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, :days::int)', { orgId, days: retentionDays });
  await appendAudit(db.admin, ages.map((age) => ({ orgId, timestamp: daysAgo(age) })));
  return orgId;
}

/** The EventBridge scheduled event (its shape; the worker reads none of it). */
const scheduledEvent = { version: '0', id: 'e1', 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), region: 'eu-central-1', resources: [], detail: {} };

describe('the retention Lambda (EventBridge daily)', () => {
  it('rehearses when invoked with dryRun, deleting nothing', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler({ dryRun: true })).toMatchObject({ dryRun: true, rowsDeleted: 2, pruned: 1, failed: 0 });
    expect(await readChain(db.admin, orgId)).toHaveLength(3);
  });

  it('prunes on the scheduled event as logbook_audit_admin, and answers what it did (the organization above too)', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler(scheduledEvent)).toMatchObject({ dryRun: false, rowsDeleted: 4, pruned: 2, failed: 0 });
    expect((await readChain(db.admin, orgId)).map((row) => row.seq)).toEqual([3, 4]);
  });

  it('stops between batches before the Lambda deadline, and says so', async () => {
    const orgId = await organization(7, [30, 20, 1]);
    expect(await handler(scheduledEvent, { getRemainingTimeInMillis: () => 30_000 })).toMatchObject({ stopped: true, rowsDeleted: 0 });
    expect(await readChain(db.admin, orgId)).toHaveLength(3);
  });

  it('refuses an invocation whose asOf is no ISO 8601 instant', async () => {
    await expect(handler({ asOf: 'tomorrow' })).rejects.toThrow();
  });
});
