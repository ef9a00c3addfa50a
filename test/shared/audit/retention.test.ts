import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorKeyId, generateAnchorKey } from '#shared/audit/anchor-signing.ts';
import { categorySql } from '#shared/audit/categories.ts';
import { checkpointBreak } from '#shared/audit/evidence.ts';
import { type RetentionRun, retentionAction, runRetention } from '#shared/audit/retention.ts';
import { selectLatestCheckpoint } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { Db } from '#shared/db/db.ts';
import { loadMigrations, migrate, migrationsDir } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import {
  appendAudit,
  appendOne,
  deleteChainRows,
  readChain,
  type Sealed,
  tamper,
  useAuditDatabase,
} from './audit-rows.ts';

const t = useAuditDatabase();
const day = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * day).toISOString();

/** An organization (a partner of its own) with a retention policy of `retentionDays`, or none. */
async function organization(retentionDays: number | null): Promise<string> {
  const { rows } = await t.db.admin.query<{ id: string }>(
    `WITH partner AS (INSERT INTO partners (name) VALUES ('Retention MSP') RETURNING id)
     INSERT INTO organizations (partner_id, name) SELECT id, 'Retention Ltd' FROM partner RETURNING id::text AS id`,
  );
  const orgId = rows[0]!.id;
  if (retentionDays !== null) {
    await t.db.admin.query(
      'INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, :days::int)',
      { orgId, days: retentionDays },
    );
  }
  return orgId;
}

/** Appends rows timestamped the given numbers of days ago, in this chain order. */
const rowsAged = (orgId: string, ages: number[]): Promise<Sealed[]> =>
  appendAudit(
    t.app,
    ages.map((age) => ({ orgId, timestamp: daysAgo(age) })),
  );

/** Signs the cuts; the integrity watch has tests of its own (anchors.test.ts). */
const key = generateAnchorKey();

/** A run of the worker as logbook_audit_admin; it also prunes the organizations of earlier tests, whose checks are done. */
const prune = (options: Parameters<typeof runRetention>[1] = {}): Promise<RetentionRun> =>
  runRetention(t.auditAdmin, { anchorKey: key, integrityWatch: false, ...options });

const organizationIn = (run: RetentionRun, orgId: string) => run.organizations.find((org) => org.orgId === orgId);
const seqs = async (orgId: string) => (await readChain(t.app, orgId)).map((row) => row.seq);
const retentionEvents = (orgId: string) =>
  t.db.admin
    .query<{
      actorType: string;
      actorId: string;
      resourceId: string;
      category: string;
      details: Record<string, unknown>;
    }>(
      `SELECT actor_type::text AS "actorType", actor_id::text AS "actorId", resource_id::text AS "resourceId", ${categorySql('action')} AS category, details
         FROM audit_logs WHERE org_id = :orgId::uuid AND action = :action::text ORDER BY seq`,
      { orgId, action: retentionAction },
    )
    .then((r) => r.rows);
const lastCleanupAt = (orgId: string) =>
  t.db.admin
    .query<{ at: Date | null }>(
      'SELECT last_cleanup_at AS at FROM audit_retention_policies WHERE org_id = :orgId::uuid',
      { orgId },
    )
    .then((r) => r.rows[0]?.at);
const checkpoints = (orgId: string) =>
  t.db.admin
    .query<{ seq: number }>('SELECT seq FROM audit_chain_checkpoints WHERE org_id = :orgId::uuid ORDER BY seq', {
      orgId,
    })
    .then((r) => r.rows.map((c) => c.seq));

describe('the retention worker', () => {
  it('deletes the oldest rows older than retentionDays, records the checkpoint and last_cleanup_at, and the chain still verifies', async () => {
    const orgId = await organization(30);
    const sealed = await rowsAged(orgId, [400, 200, 31, 29, 1]);
    const before = Date.now();
    const run = await prune();
    expect(organizationIn(run, orgId)).toMatchObject({ rowsDeleted: 3, fromSeq: 1, throughSeq: 3, retentionDays: 30 });
    // The retained rows, then the worker's own event.
    expect(await seqs(orgId)).toEqual([4, 5, 6]);
    // Signed by the worker in the cut's transaction: the policy, the instant and the last row's timestamp.
    expect(await selectLatestCheckpoint(t.app, orgId)).toEqual({
      seq: 3,
      checksum: sealed[2]!.checksum,
      signed: {
        lastTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        retentionDays: 30,
        asOf: expect.any(String),
        anchored: false,
        keyId: anchorKeyId(key),
        signature: expect.any(String),
      },
    });
    const checkpoint = (await selectLatestCheckpoint(t.app, orgId))!;
    expect(checkpointBreak(orgId, checkpoint, key)).toBeUndefined();
    expect((await lastCleanupAt(orgId))!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 3 });
  });

  it('writes one system event per organization it pruned, categorized system, with what it cut', async () => {
    const orgId = await organization(10);
    await rowsAged(orgId, [20, 15, 12]);
    const asOf = new Date();
    const run = await prune({ asOf });
    const cut = organizationIn(run, orgId)!;
    expect(await retentionEvents(orgId)).toEqual([
      {
        actorType: 'system',
        actorId: '00000000-0000-0000-0000-000000000000',
        resourceId: orgId,
        category: 'system',
        details: {
          rowsDeleted: 3,
          fromSeq: 1,
          throughSeq: 3,
          retentionDays: 10,
          cutoff: cut.cutoff,
          asOf: asOf.toISOString(),
          dryRun: false,
        },
      },
    ]);
    expect(cut.cutoff).toBe(new Date(asOf.getTime() - 10 * day).toISOString());
  });

  it('stops at the first row inside the window: a prefix cut by seq, whatever the timestamps after it', async () => {
    const orgId = await organization(30);
    // A late report (seq 3, recent) sits before rows imported with old timestamps (seq 4, 5).
    await rowsAged(orgId, [90, 80, 1, 300, 300]);
    const run = await prune();
    expect(organizationIn(run, orgId)).toMatchObject({ rowsDeleted: 2, throughSeq: 2 });
    expect(await seqs(orgId)).toEqual([3, 4, 5, 6]);
    expect(await verifyChain(t.app, orgId)).toMatchObject({ ok: true });
  });

  it('keeps a row exactly retentionDays old: only older rows are cut', async () => {
    const orgId = await organization(5);
    const asOf = new Date('2026-03-01T00:00:00Z');
    await appendAudit(t.app, [
      { orgId, timestamp: '2026-02-23T23:59:59.999999Z' },
      { orgId, timestamp: '2026-02-24T00:00:00Z' },
    ]);
    await prune({ asOf });
    expect((await readChain(t.app, orgId)).map((row) => row.timestamp)).toEqual([
      '2026-02-24T00:00:00.000000Z',
      expect.any(String),
    ]);
  });

  it('skips organizations without a policy', async () => {
    const orgId = await organization(null);
    await rowsAged(orgId, [5000, 4000]);
    const run = await prune();
    expect(organizationIn(run, orgId)).toBeUndefined();
    expect(run.skipped).toBeGreaterThanOrEqual(1);
    expect(await seqs(orgId)).toEqual([1, 2]);
    expect(await retentionEvents(orgId)).toEqual([]);
  });

  it('cuts in batches of batchRows rows, one transaction and checkpoint each, to the same result', async () => {
    const ages = [100, 99, 98, 97, 96, 95, 94, 10, 9];
    const batched = await organization(30);
    await rowsAged(batched, ages);
    const progress: number[] = [];
    await prune({ batchRows: 2, onProgress: (p) => void progress.push(p.rowsDeleted) });
    expect(await checkpoints(batched)).toEqual([2, 4, 6, 7]);
    // Reported after every batch: never more than batchRows rows between two reports.
    expect(progress.every((rows, i) => rows - (progress[i - 1] ?? 0) <= 2)).toBe(true);
    const whole = await organization(30);
    await rowsAged(whole, ages);
    await prune();
    expect(await checkpoints(whole)).toEqual([7]);
    const retained = async (orgId: string) =>
      (await readChain(t.app, orgId)).filter((row) => row.action !== retentionAction).map((row) => row.seq);
    expect(await retained(batched)).toEqual(await retained(whole));
    expect((await retentionEvents(batched)).map((e) => e.details.rowsDeleted)).toEqual([7]);
    expect(await verifyChain(t.app, batched)).toMatchObject({ ok: true });
  });

  it('deletes nothing more when run again, and writes no second event, but records the cleanup', async () => {
    const orgId = await organization(30);
    await rowsAged(orgId, [60, 50, 2]);
    await prune();
    const first = await lastCleanupAt(orgId);
    const chain = await readChain(t.app, orgId);
    const again = await prune();
    expect(organizationIn(again, orgId)).toMatchObject({ rowsDeleted: 0, fromSeq: null, throughSeq: null });
    expect(await readChain(t.app, orgId)).toEqual(chain);
    expect(await retentionEvents(orgId)).toHaveLength(1);
    expect((await lastCleanupAt(orgId))!.getTime()).toBeGreaterThan(first!.getTime());
  });

  it('may cut a whole chain; its own event then continues it from the head', async () => {
    const orgId = await organization(1);
    const sealed = await rowsAged(orgId, [9, 8, 7]);
    await prune();
    const chain = await readChain(t.app, orgId);
    expect(chain).toEqual([
      expect.objectContaining({ seq: 4, action: retentionAction, prevChecksum: sealed[2]!.checksum }),
    ]);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 1 });
  });

  it('with dryRun, reports per organization what would be deleted, and writes nothing at all', async () => {
    const orgId = await organization(30);
    const idle = await organization(30);
    await rowsAged(orgId, [100, 90, 1]);
    await rowsAged(idle, [1]);
    const run = await prune({ dryRun: true });
    expect(run.dryRun).toBe(true);
    expect(organizationIn(run, orgId)).toMatchObject({ rowsDeleted: 2, fromSeq: 1, throughSeq: 2 });
    expect(organizationIn(run, idle)).toMatchObject({ rowsDeleted: 0, fromSeq: null, throughSeq: null });
    expect(await seqs(orgId)).toEqual([1, 2, 3]);
    expect(await checkpoints(orgId)).toEqual([]);
    expect(await retentionEvents(orgId)).toEqual([]);
    expect(await lastCleanupAt(orgId)).toBeNull();
  });

  it('evaluates the windows as of another moment with asOf, and records it in the event', async () => {
    const orgId = await organization(30);
    await rowsAged(orgId, [10, 3]);
    expect(organizationIn(await prune(), orgId)).toMatchObject({ rowsDeleted: 0 });
    const asOf = new Date(Date.now() + 25 * day);
    const run = await prune({ asOf });
    expect(run.asOf).toBe(asOf.toISOString());
    expect(organizationIn(run, orgId)).toMatchObject({ rowsDeleted: 1, throughSeq: 1 });
    expect((await retentionEvents(orgId))[0]!.details).toMatchObject({ asOf: asOf.toISOString(), rowsDeleted: 1 });
  });

  it('loses no row appended while it prunes', async () => {
    const orgId = await organization(30);
    await appendAudit(
      t.app,
      Array.from({ length: 1000 }, () => ({ orgId, timestamp: daysAgo(60) })),
    );
    let pruning = true;
    let batchCut = () => {};
    const nextBatch = () => new Promise<void>((resolve) => (batchCut = resolve));
    const appended: Sealed[] = [];
    // One append beside each batch the run cuts: rows arrive while cuts are in flight, without a busy loop that a
    // loaded machine would make slower than the run itself.
    const writer = (async () => {
      while (pruning) {
        const cut = nextBatch();
        appended.push(
          ...(await appendAudit(
            t.app,
            Array.from({ length: 5 }, () => ({ orgId })),
          )),
        );
        await cut;
      }
    })();
    const run = await prune({ batchRows: 50, onProgress: () => batchCut() }).finally(() => {
      pruning = false;
      batchCut();
    });
    await writer;
    expect(organizationIn(run, orgId)).toMatchObject({ rowsDeleted: 1000, throughSeq: 1000 });
    expect(appended.length).toBeGreaterThan(0);
    const retained = new Set((await readChain(t.app, orgId)).map((row) => row.id));
    expect(appended.filter((row) => !retained.has(row.id))).toEqual([]);
    expect(await verifyChain(t.app, orgId)).toMatchObject({ ok: true, checked: appended.length + 1 });
  });
});

describe('ingestion idempotency keys', () => {
  const key = (name: string, hoursAgo: number) =>
    t.db.admin.query(
      `INSERT INTO audit_ingest_requests (principal_type, principal_id, idempotency_key, request_hash, created_at)
       VALUES ('api_key', gen_random_uuid(), :name::text, repeat('0', 64), now() - make_interval(hours => :hoursAgo::int))`,
      { name, hoursAgo },
    );
  const keys = async () =>
    (
      await t.db.admin.query<{ name: string }>('SELECT idempotency_key AS name FROM audit_ingest_requests ORDER BY 1')
    ).rows.map((row) => row.name);

  it('are deleted 25 hours after their first use, in batches, and kept by a dry run', async () => {
    await t.db.admin.query('DELETE FROM audit_ingest_requests');
    for (const [name, hoursAgo] of [
      ['stale-1', 26],
      ['stale-2', 48],
      ['stale-3', 30],
      ['retry-window', 23],
      ['margin', 24],
    ] as const)
      await key(name, hoursAgo);
    expect((await prune({ dryRun: true })).ingestKeysDeleted).toBe(0);
    expect(await keys()).toHaveLength(5);
    expect((await prune({ batchRows: 2 })).ingestKeysDeleted).toBe(3);
    expect(await keys()).toEqual(['margin', 'retry-window']);
  });

  it("the API's keys too, 25 hours after their first use", async () => {
    await t.db.admin.query('DELETE FROM audit_ingest_requests');
    for (const [name, hoursAgo] of [
      ['stale', 26],
      ['fresh', 23],
    ] as const)
      await t.db.admin.query(
        `INSERT INTO idempotency_keys (principal_type, principal_id, idempotency_key, request_hash, created_at)
         VALUES ('user', :name::text, repeat('0', 64), repeat('0', 64), now() - make_interval(hours => :hoursAgo::int))`,
        { name, hoursAgo },
      );
    expect((await prune()).ingestKeysDeleted).toBe(1);
    const { rows } = await t.db.admin.query<{ name: string }>('SELECT principal_id AS name FROM idempotency_keys');
    expect(rows.map((row) => row.name)).toEqual(['fresh']);
  });
});

describe('the verifier after a retention cut', () => {
  async function prunedChain() {
    const orgId = await organization(30);
    const sealed = await rowsAged(orgId, [90, 80, 70, 3, 2, 1]);
    await prune();
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 4 });
    return { orgId, sealed };
  }
  const removeRow = (orgId: string, seq: number) =>
    tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid AND seq = :seq::bigint', { orgId, seq }));

  it('reports the earliest retained row deleted by hand as missing: it is no retention cut', async () => {
    const { orgId } = await prunedChain();
    await removeRow(orgId, 4);
    expect(await verifyChain(t.app, orgId)).toMatchObject({
      ok: false,
      firstBreak: { seq: 4, id: null, kind: 'missing' },
    });
  });

  it('reports a row deleted beyond the cut as missing', async () => {
    const { orgId } = await prunedChain();
    await removeRow(orgId, 5);
    expect(await verifyChain(t.app, orgId)).toMatchObject({
      ok: false,
      firstBreak: { seq: 5, id: null, kind: 'missing' },
    });
  });

  it('reports rows deleted at the tail as missing', async () => {
    const { orgId } = await prunedChain();
    await removeRow(orgId, 7);
    expect(await verifyChain(t.app, orgId)).toMatchObject({
      ok: false,
      firstBreak: { seq: 7, id: null, kind: 'missing' },
    });
  });
});

describe('who may delete audit rows and change policies', () => {
  // test/shared/audit/append-only.test.ts proves the rest: the app role cannot delete even with the flag, the
  // audit-admin role cannot delete without it nor update, and nobody (the owner included) updates or truncates.

  it('the audit-admin role cannot truncate audit rows, even with the flag', async () => {
    const orgId = await organization(30);
    await rowsAged(orgId, [100]);
    const attempt = t.auditAdmin.transaction(async (tx) => {
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      return tx.query('TRUNCATE audit_entries, audit_chain_links');
    });
    await expect(attempt).rejects.toThrow(/permission denied|append-only/);
    expect(await seqs(orgId)).toEqual([1]);
  });

  it('the audit-admin role appends only its own system.audit.* events of actorType system', async () => {
    const orgId = await organization(30);
    await expect(appendOne(t.auditAdmin, { orgId, actorType: 'user', action: 'user.login' })).rejects.toThrow(
      /writes only its own system events/,
    );
    await expect(appendOne(t.auditAdmin, { orgId, actorType: 'system', action: 'device.delete' })).rejects.toThrow(
      /writes only its own system events/,
    );
    expect(await seqs(orgId)).toEqual([]);
    expect(await appendOne(t.auditAdmin, { orgId, actorType: 'system', action: retentionAction })).toMatchObject({
      seq: 1,
    });
  });

  it('hold only what they need on the policies: the API saves retention, the worker records cleanups', async () => {
    const { rows } = await t.db.admin.query<{ role: string; privilege: string }>(
      `SELECT r AS role, p AS privilege
         FROM unnest(ARRAY['logbook_app', 'logbook_audit_admin']) r,
              unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
        WHERE has_table_privilege(r, 'audit_retention_policies', p)
        ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { role: 'logbook_app', privilege: 'SELECT' },
      { role: 'logbook_audit_admin', privilege: 'SELECT' },
    ]);
    const columns = await t.db.admin.query<{ role: string; privilege: string; column: string }>(
      `SELECT r AS role, p AS privilege, c.attname::text AS column
         FROM unnest(ARRAY['logbook_app', 'logbook_audit_admin']) r, unnest(ARRAY['INSERT', 'UPDATE']) p,
              pg_attribute c
        WHERE c.attrelid = 'audit_retention_policies'::regclass AND c.attnum > 0 AND NOT c.attisdropped
          AND has_column_privilege(r, 'audit_retention_policies', c.attname, p)
        ORDER BY 1, 2, 3`,
    );
    expect(columns.rows).toEqual([
      { role: 'logbook_app', privilege: 'INSERT', column: 'org_id' },
      { role: 'logbook_app', privilege: 'INSERT', column: 'retention_days' },
      { role: 'logbook_app', privilege: 'UPDATE', column: 'retention_days' },
      { role: 'logbook_app', privilege: 'UPDATE', column: 'updated_at' },
      { role: 'logbook_audit_admin', privilege: 'UPDATE', column: 'last_cleanup_at' },
    ]);
    const orgId = await organization(30);
    await expect(
      t.auditAdmin.query('UPDATE audit_retention_policies SET retention_days = 1 WHERE org_id = :orgId::uuid', {
        orgId,
      }),
    ).rejects.toThrow(/permission denied/);
    await expect(
      t.app.query('UPDATE audit_retention_policies SET last_cleanup_at = now() WHERE org_id = :orgId::uuid', { orgId }),
    ).rejects.toThrow(/permission denied/);
    await expect(
      t.app.query('UPDATE audit_retention_policies SET archive_to_s3 = true WHERE org_id = :orgId::uuid', { orgId }),
    ).rejects.toThrow(/permission denied/);
  });
});

describe('the retention migration', () => {
  it('creates no policy for the organizations that existed before it', async () => {
    const name = `${t.db.name}_upgrade`;
    const before = mkdtempSync(join(tmpdir(), 'logbook-before-retention-'));
    const admin = t.db.admin;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(t.db.urls.admin);
    url.pathname = `/${name}`;
    const upgraded: Db = createPgDb({ connectionString: url.toString(), max: 1 });
    try {
      for (const migration of loadMigrations().filter((m) => m.name < '0008'))
        cpSync(join(migrationsDir, migration.name), join(before, migration.name));
      await migrate(upgraded, { dir: before });
      await upgraded.query(
        `WITH partner AS (INSERT INTO partners (name) VALUES ('Old MSP') RETURNING id) INSERT INTO organizations (partner_id, name) SELECT id, 'Old Ltd' FROM partner`,
      );
      // Only the migration under test is applied: the rest of the schema has nothing to say about it.
      const retention = loadMigrations().find((m) => m.name.startsWith('0008'))!;
      cpSync(join(migrationsDir, retention.name), join(before, retention.name));
      expect(await migrate(upgraded, { dir: before })).toEqual(['0008_audit_retention.sql']);
      expect((await upgraded.query('SELECT count(*)::int AS n FROM audit_retention_policies')).rows).toEqual([
        { n: 0 },
      ]);
    } finally {
      await upgraded.close();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      rmSync(before, { recursive: true, force: true });
    }
  });
});
