import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FileAuditSpool, fileAuditSpool } from '#infra/local/audit-file-spool.ts';
import { useAuditSpool } from '#shared/audit/spool.ts';
import type { AuditRowInput } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { Db } from '#shared/db/db.ts';
import { type DatabaseIdentity, selectDatabaseIdentity } from '#shared/db/identity.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let dir: string;
let spool: FileAuditSpool;
let app: Db;
let tenant: Tenant;
let database: DatabaseIdentity;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'logbook-audit-spool-'));
  app = createPgDb({ connectionString: t.db.urls.app, max: 1 });
  database = await selectDatabaseIdentity(app);
  spool = fileAuditSpool(dir, database);
  useAuditSpool(spool);
  tenant = await createTenant(t.api, 'Spooled');
});
afterAll(async () => {
  useAuditSpool(undefined);
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const updates = (orgId: string) =>
  t.db.admin
    .query<{ timestamp: Date; name: unknown }>(
      `SELECT timestamp, details->'after'->>'name' AS name FROM audit_logs
        WHERE org_id = :orgId::uuid AND action = 'organization.update' ORDER BY seq`,
      { orgId },
    )
    .then((r) => r.rows);

describe('the audit spool', () => {
  it('keeps an audit write the database refused, and the replay appends it with its original timestamp', async () => {
    // The fault: the API's role may not store a change's audit rows for a while (the request itself still succeeds).
    await t.db.admin.query('REVOKE INSERT ON audit_intents FROM logbook_app');
    const before = Date.now();
    let reply: Awaited<ReturnType<typeof t.api.request>>;
    try {
      reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
        token: tenant.partnerToken,
        body: { name: 'Spooled Renamed' },
      });
    } finally {
      await t.db.admin.query('GRANT INSERT ON audit_intents TO logbook_app');
    }
    expect(reply.status).toBe(200);
    expect(await updates(tenant.orgId)).toEqual([]);
    // Kept under its database, and naming it.
    const spooled = readFileSync(join(dir, `${database.systemIdentifier}-${database.name}`, 'pending.jsonl'), 'utf8');
    expect(
      spooled
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).database),
    ).toEqual([database]);

    await new Promise((resolve) => setTimeout(resolve, 50));
    const replayedAt = Date.now();
    expect(await spool.replay(app)).toBe(1);
    const rows = await updates(tenant.orgId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.name).toBe('Spooled Renamed');
    // The row keeps the instant of the request, not of the replay.
    expect(rows[0]!.timestamp.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(rows[0]!.timestamp.getTime()).toBeLessThan(replayedAt);
    expect(await verifyChain(app, tenant.orgId)).toMatchObject({ ok: true });
    // Replayed once only.
    expect(await spool.replay(app)).toBe(0);
    expect(await updates(tenant.orgId)).toHaveLength(1);
  });

  it('leaves the rows spooled when the replay fails, and appends them on a later replay', async () => {
    await t.db.admin.query('REVOKE INSERT ON audit_intents, audit_entries FROM logbook_app');
    try {
      const reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
        token: tenant.partnerToken,
        body: { name: 'Spooled Twice' },
      });
      expect(reply.status).toBe(200);
      await expect(spool.replay(app)).rejects.toThrow(/permission denied/);
    } finally {
      await t.db.admin.query('GRANT INSERT ON audit_intents, audit_entries TO logbook_app');
    }
    expect(await spool.replay(app)).toBe(1);
    expect((await updates(tenant.orgId)).map((row) => row.name)).toEqual(['Spooled Renamed', 'Spooled Twice']);
  });

  it('replays rows only into the database they were spooled for; rows of another are kept and reported', async () => {
    // A server of the same checkout whose database is another one spooled a row there.
    const elsewhere = { systemIdentifier: database.systemIdentifier, name: `${database.name}_elsewhere` };
    const row: AuditRowInput = {
      orgId: tenant.orgId,
      actorType: 'system',
      actorId: '00000000-0000-0000-0000-000000000000',
      actorEmail: null,
      action: 'organization.update',
      resourceType: 'organization',
      resourceId: tenant.orgId,
      resourceName: null,
      details: { after: { name: 'Spooled Elsewhere' } },
      ipAddress: null,
      userAgent: null,
      result: 'success',
      errorMessage: null,
      timestamp: new Date().toISOString(),
    };
    await fileAuditSpool(dir, elsewhere).put(row);
    expect(await spool.replay(app)).toBe(0);
    expect((await updates(tenant.orgId)).map((r) => r.name)).not.toContain('Spooled Elsewhere');
    expect(await spool.held(app)).toEqual([{ database: elsewhere, rows: 1 }]);
    // Still there for its own database, however often this one replays.
    expect(await spool.replay(app)).toBe(0);
    expect(await spool.held(app)).toEqual([{ database: elsewhere, rows: 1 }]);
  });
});
