/**
 * Commits of the history import into one organization side by side: a commit meeting another's keys is tried again
 * whole, through either executor; one that keeps meeting them answers 409 and stores nothing; a large commit is sent
 * in several statements. Triggers added to the tables here live in this file's own database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '#functions/queue/jobs.ts';
import { commitAuditHistoryImport } from '#shared/audit/history-import.ts';
import { historyImport } from '#shared/audit/history-import-schemas.ts';
import { maxInsertBytes } from '#shared/audit/history-import-store.ts';
import { type AuditContext, flushAudit } from '#shared/audit/writer.ts';
import type { Tx } from '#shared/db/db.ts';
import { runJobsLocally } from '#shared/queue/work-queue.ts';
import { useApi } from '#test/support/api.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { historyImportCounts } from '#test/support/history-import.ts';
import { platformAdminPrincipal } from '#test/support/principals.ts';
import { createTenant } from '#test/support/tenants.ts';

const IMPORT = '/api/v1/audit-logs/import';
const t = useApi();

// The move jobs the imports arm are left alone: the rows stay in the lane.
beforeAll(() =>
  runJobsLocally(async (job) => {
    if (job.kind !== 'audit.history.move') await runJob(job);
  }),
);
afterAll(() => runJobsLocally(runJob));

const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
const row = (externalId: string, extra: Record<string, unknown> = {}) => ({
  externalId,
  timestamp: anHourAgo,
  action: 'device.reboot',
  actorId: 'tech-7',
  details: { reason: 'patch window' },
  ...extra,
});
const post = (token: string, body: unknown, headers?: Record<string, string>) =>
  t.api.request('POST', IMPORT, { token, body, headers });

const { laneRows, summaryRows } = historyImportCounts(() => t.db.admin);

/** Resolves once a backend of this database waits on a lock. */
async function someoneWaitsOnALock(): Promise<void> {
  for (;;) {
    const { rows } = await t.db.admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Runs `commit` while another transaction holds externalId's key uncommitted (as another import of that row would,
 * with other content), and commits that transaction once the commit waits on it.
 */
async function withKeyHeldBy<T>(orgId: string, externalId: string, commit: () => Promise<T>): Promise<T> {
  let running: Promise<T> | undefined;
  await t.db.admin.transaction(async (tx: Tx) => {
    await tx.query(
      `INSERT INTO audit_import_keys (org_id, source_system, external_id, digest, pos)
       VALUES (:orgId::uuid, 'datto', :externalId::text, repeat('0', 64), 1)`,
      { orgId, externalId },
    );
    running = commit();
    await someoneWaitsOnALock();
  });
  return running!;
}

describe('POST /audit-logs/import beside another commit of its rows', () => {
  it('waits for the other commit, is tried again, and finds that row a conflict; stores the rest once', async () => {
    const tenant = await createTenant(t.api, 'Held key');
    const rows = Array.from({ length: 5 }, (_, i) => row(`k-${i}`));
    const headers = { 'idempotency-key': 'held-key-1' };
    const reply = await withKeyHeldBy(tenant.orgId, 'k-2', () =>
      post(tenant.orgToken, { sourceSystem: 'datto', rows }, headers),
    );
    expect(reply.status).toBe(200);
    expect(reply.body.summary).toMatchObject({ create: 4, refused: 1 });
    expect(reply.body.rows[2]).toMatchObject({ externalId: 'k-2', annotation: 'conflict', outcome: 'refused' });
    expect(await laneRows(tenant.orgId)).toBe(4);
    expect(await summaryRows(tenant.orgId)).toBe(1);
    // The retried commit's reply is the one kept for the key.
    const again = await post(tenant.orgToken, { sourceSystem: 'datto', rows }, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(reply.body);
    expect(await summaryRows(tenant.orgId)).toBe(1);
  });

  it('answers 409 after five commits that each met another commit of its rows, and stores nothing', async () => {
    const tenant = await createTenant(t.api, 'Always taken');
    await t.db.admin.query('CREATE SEQUENCE keys_refused');
    await t.db.admin.query(
      `CREATE FUNCTION keys_always_taken() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
       BEGIN
         PERFORM nextval('public.keys_refused');
         RAISE EXCEPTION 'duplicate key value violates unique constraint "audit_import_keys_pkey"'
           USING ERRCODE = 'unique_violation', CONSTRAINT = 'audit_import_keys_pkey';
       END $$`,
    );
    await t.db.admin.query(
      `CREATE TRIGGER keys_always_taken AFTER INSERT ON audit_import_keys
         FOR EACH ROW WHEN (NEW.org_id = '${tenant.orgId}') EXECUTE FUNCTION keys_always_taken()`,
    );
    try {
      const reply = await post(
        tenant.orgToken,
        { sourceSystem: 'datto', rows: [row('a')] },
        { 'idempotency-key': 'k' },
      );
      expect(reply.status).toBe(409);
      expect(reply.body.error).toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('send the request again'),
      });
      const { rows } = await t.db.admin.query<{ n: number }>('SELECT last_value::int AS n FROM keys_refused');
      expect(rows[0]!.n).toBe(5);
      expect(await laneRows(tenant.orgId)).toBe(0);
      expect(await summaryRows(tenant.orgId)).toBe(0);
    } finally {
      await t.db.admin.query('DROP TRIGGER keys_always_taken ON audit_import_keys');
    }
    // The key was not spent on the refused request: sent again, it commits.
    const retried = await post(
      tenant.orgToken,
      { sourceSystem: 'datto', rows: [row('a')] },
      { 'idempotency-key': 'k' },
    );
    expect(retried.status).toBe(200);
    expect(retried.body.summary.create).toBe(1);
  });

  it('sends a commit larger than one statement carries in several statements, in request order, all in the chain', async () => {
    const tenant = await createTenant(t.api, 'Statements');
    await t.db.admin.query('CREATE TABLE lane_statements (rows int)');
    await t.db.admin.query(
      `CREATE FUNCTION lane_statement() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
       BEGIN
         INSERT INTO public.lane_statements SELECT count(*) FROM added WHERE org_id = '${tenant.orgId}' HAVING count(*) > 0;
         RETURN NULL;
       END $$`,
    );
    await t.db.admin.query(
      `CREATE TRIGGER lane_statement AFTER INSERT ON audit_history_lane REFERENCING NEW TABLE AS added
         FOR EACH STATEMENT EXECUTE FUNCTION lane_statement()`,
    );
    try {
      // Rows of about 1 KB, as many as one statement sends in bytes: with what the import adds, they pass it.
      const count = Math.ceil(maxInsertBytes / 1_000);
      const rows = Array.from({ length: count }, (_, i) => row(`big-${i}`, { details: { pad: 'x'.repeat(900) } }));
      const reply = await post(tenant.orgToken, { sourceSystem: 'datto', rows });
      expect(reply.status).toBe(200);
      const { rows: statements } = await t.db.admin.query<{ rows: number }>('SELECT rows FROM lane_statements');
      expect(statements.length).toBe(2);
      expect(statements[0]!.rows + statements[1]!.rows).toBe(count);
      const { rows: stored } = await t.db.admin.query<{ externalId: string }>(
        `SELECT a.details -> 'imported' ->> 'externalId' AS "externalId" FROM audit_logs a
          WHERE a.org_id = :orgId::uuid AND a.details ? 'imported' ORDER BY a.seq`,
        { orgId: tenant.orgId },
      );
      expect(stored.map((entry) => entry.externalId)).toEqual(rows.map((r) => r.externalId));
      const verified = await t.api.request('GET', '/api/v1/audit-logs/verify', { token: tenant.orgToken });
      expect(verified.body).toMatchObject({ ok: true });
    } finally {
      await t.db.admin.query('DROP TRIGGER lane_statement ON audit_history_lane');
    }
  });
});

describe('the history import through the Data API', () => {
  let local: LocalDataApi;
  beforeAll(async () => {
    local = await startLocalDataApi(t.db);
  });
  afterAll(() => local.close());

  const commitThrough = async (orgId: string, rows: Record<string, unknown>[]) => {
    const db = local.db('app');
    const principal = platformAdminPrincipal('importer@concurrency.test', 'Importer');
    const audit: AuditContext = { db, caller: principal, pending: [] };
    const reply = await commitAuditHistoryImport(
      db,
      principal,
      audit,
      historyImport.parse({ orgId, sourceSystem: 'datto', rows }),
    );
    await flushAudit(audit);
    return reply;
  };

  it('finds the key taken meanwhile in the Data API error, and tries the commit again', async () => {
    const tenant = await createTenant(t.api, 'Held key, Data API');
    const rows = Array.from({ length: 5 }, (_, i) => row(`k-${i}`));
    const reply = await withKeyHeldBy(tenant.orgId, 'k-2', () => commitThrough(tenant.orgId, rows));
    expect(reply.summary).toMatchObject({ create: 4, refused: 1 });
    expect(await laneRows(tenant.orgId)).toBe(4);
  });

  it('reads the stored keys of 5,000 long externalIds within the 1 MiB result: a second import is all unchanged', async () => {
    const tenant = await createTenant(t.api, 'Long ids');
    const rows = Array.from({ length: 5_000 }, (_, i) => row(`${'e'.repeat(200)}-${i}`));
    expect((await commitThrough(tenant.orgId, rows)).summary.create).toBe(5_000);
    expect((await commitThrough(tenant.orgId, rows)).summary.unchanged).toBe(5_000);
    expect(await laneRows(tenant.orgId)).toBe(5_000);
  });
});
