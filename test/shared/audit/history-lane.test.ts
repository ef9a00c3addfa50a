import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '#functions/queue/jobs.ts';
import { generateAnchorKey } from '#shared/audit/anchor-signing.ts';
import { countWaitingHistoryRows, moveHistoryBatch, runHistoryMove } from '#shared/audit/history-lane.ts';
import { type AuditListQuery, listAuditEntries } from '#shared/audit/query.ts';
import { runRetention } from '#shared/audit/retention.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';
import { insertOrganization, insertPartner } from '#shared/hierarchy/store.ts';
import { type Job, localJobsSettled, runJobsLocally } from '#shared/queue/work-queue.ts';
import { type AuditInput, appendAudit, readChain, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();
const day = 86_400_000;
const daysAgo = (days: number) => new Date(Date.now() - days * day).toISOString();
let partnerId: string;

/** An organization of its own, with a retention policy of `retentionDays` if given. */
async function organization(retentionDays?: number): Promise<{ orgId: string; admin: Principal }> {
  const orgId = (await insertOrganization(t.db.admin, { partnerId, name: `Lane ${randomUUID()}` })).id;
  if (retentionDays !== undefined)
    await t.db.admin.query(
      'INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, :days::int)',
      { orgId, days: retentionDays },
    );
  return {
    orgId,
    admin: {
      actorType: 'user',
      id: randomUUID(),
      email: 'admin@lane.test',
      name: 'Admin',
      role: 'org_admin',
      scope: 'organization',
      partnerId,
      orgId,
      permissions: scopedPermissions('organization', rolePermissions.org_admin),
    } as Principal,
  };
}

/** A run of the daily retention worker (its integrity watch has tests of its own). */
const retention = () => runRetention(t.auditAdmin, { anchorKey: generateAnchorKey(), integrityWatch: false });

const search = (principal: Principal, query: Partial<AuditListQuery>) =>
  listAuditEntries(t.app, principal, { page: 1, limit: 50, skipCount: false, ...query });

/** Which table holds each of the organization's rows, in chain order. */
const tables = (orgId: string) =>
  t.db.admin
    .query<{ table: string }>(
      `SELECT a.tableoid::regclass::text AS table FROM audit_entries a
         JOIN audit_chain_links l ON l.pos = a.pos WHERE a.org_id = :orgId::uuid ORDER BY l.seq`,
      { orgId },
    )
    .then((r) => r.rows.map((row) => row.table));

const counts = (orgId: string) =>
  t.db.admin
    .query<{ action: string; n: number }>(
      'SELECT action, n::int AS n FROM audit_action_counts WHERE org_id = :orgId::uuid ORDER BY action',
      { orgId },
    )
    .then((r) => r.rows);

/** Empties the lane of earlier tests' rows, so each test moves only its own. */
async function drain(): Promise<void> {
  while ((await moveHistoryBatch(t.app, 10_000)).waiting);
}

const history = (orgId: string, n: number, word = 'zebra'): AuditInput[] =>
  Array.from({ length: n }, (_, i) => ({
    orgId,
    timestamp: daysAgo(n - i),
    action: i % 2 ? 'device.reboot' : 'user.login',
    details: { note: `${word}-${i}` },
  }));

/** The jobs armed in this file, recorded instead of run. */
const armed: Job[] = [];
beforeAll(async () => {
  partnerId = ((await insertPartner(t.db.admin, 'Lane MSP')) as { id: string }).id;
  runJobsLocally(async (job) => {
    armed.push(job);
  });
});
afterAll(() => runJobsLocally(runJob));

/** The moves armed by `work`. */
async function movesArmedBy(work: () => Promise<unknown>): Promise<number> {
  await localJobsSettled();
  armed.length = 0;
  await work();
  await localJobsSettled();
  return armed.filter((job) => job.kind === 'audit.history.move').length;
}

describe('the history lane', () => {
  it('seals rows as they enter it, into the same chain as the entries, and every reader reads them', async () => {
    const { orgId, admin } = await organization();
    await appendAudit(t.app, [{ orgId, action: 'device.update' }]);
    const imported = await appendAudit(t.app, history(orgId, 4), 'audit_history_lane');
    await appendAudit(t.app, [{ orgId, action: 'device.update' }]);
    expect(imported.map((row) => row.seq)).toEqual([2, 3, 4, 5]);
    expect(await tables(orgId)).toEqual(['audit_entries', ...Array(4).fill('audit_history_lane'), 'audit_entries']);
    expect((await verifyChain(t.app, orgId)).ok).toBe(true);
    expect(await counts(orgId)).toEqual([
      { action: 'device.reboot', n: 2 },
      { action: 'device.update', n: 2 },
      { action: 'user.login', n: 2 },
    ]);
    // Lists and their totals, newest first by timestamp: the history sorts behind today's rows.
    const all = await search(admin, {});
    expect(all.pagination.total).toBe(6);
    expect(all.rows.map((row) => row.seq)).toEqual([6, 1, 5, 4, 3, 2]);
    expect(await countWaitingHistoryRows(t.app, orgId)).toBe(4);
  });

  it('is searched exactly while its rows wait, and after they moved: the same rows and totals', async () => {
    await drain();
    const { orgId, admin } = await organization();
    await appendAudit(t.app, history(orgId, 30, 'okapi'), 'audit_history_lane');
    await appendAudit(t.app, [{ orgId, action: 'script.execute', details: { note: 'okapi-live' } }]);
    const queries: Partial<AuditListQuery>[] = [
      { q: 'okapi-7' },
      { q: 'okapi' },
      { q: 'reboot' },
      { action: 'device.reboot' },
      { q: 'okapi', action: 'user.login' },
      { q: 'no such text' },
    ];
    const read = async () =>
      Promise.all(
        queries.map(async (query) => {
          const { rows, pagination } = await search(admin, query);
          return { ids: rows.map((row) => row.id), total: pagination.total };
        }),
      );
    const waiting = await read();
    expect(waiting.map((result) => result.total)).toEqual([1, 31, 15, 15, 15, 0]);
    expect(await runHistoryMove(t.app)).toBe(30);
    expect(await countWaitingHistoryRows(t.app)).toBe(0);
    expect(await tables(orgId)).toEqual(Array(31).fill('audit_entries'));
    expect(await read()).toEqual(waiting);
  });

  it('moves rows with their ids, positions and links: no new link, the same counts, the chain verifies', async () => {
    await drain();
    const { orgId } = await organization();
    await appendAudit(t.app, history(orgId, 7), 'audit_history_lane');
    const before = await readChain(t.app, orgId);
    const countsBefore = await counts(orgId);
    const links = () =>
      t.db.admin
        .query<{ n: number }>('SELECT count(*)::int AS n FROM audit_chain_links WHERE org_id = :orgId::uuid', {
          orgId,
        })
        .then((r) => r.rows[0]!.n);
    expect(await moveHistoryBatch(t.app, 3)).toEqual({ moved: 3, waiting: true });
    expect(await tables(orgId)).toEqual([...Array(3).fill('audit_entries'), ...Array(4).fill('audit_history_lane')]);
    expect(await moveHistoryBatch(t.app, 10)).toEqual({ moved: 4, waiting: false });
    expect(await readChain(t.app, orgId)).toEqual(before);
    expect(await links()).toBe(7);
    expect(await counts(orgId)).toEqual(countsBefore);
    expect((await verifyChain(t.app, orgId)).ok).toBe(true);
    // The next entry continues the chain after the moved rows.
    const [next] = await appendAudit(t.app, [{ orgId }]);
    expect(next!.seq).toBe(8);
    expect(next!.prevChecksum).toBe(before.at(-1)!.checksum);
  });

  it('takes one mover at a time: a second, while the first holds its batch, moves nothing and says rows wait', async () => {
    await drain();
    const { orgId } = await organization();
    await appendAudit(t.app, history(orgId, 2), 'audit_history_lane');
    await t.db.admin.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(2, 0)');
      expect(await moveHistoryBatch(t.app, 10)).toEqual({ moved: 0, waiting: true });
    });
    expect(await moveHistoryBatch(t.app, 10)).toEqual({ moved: 2, waiting: false });
  });

  it('is append-only to the API role: no update, no delete, no truncate, and no statement passes for a move', async () => {
    await drain();
    const { orgId } = await organization();
    const [row] = await appendAudit(t.app, history(orgId, 1), 'audit_history_lane');
    await expect(t.app.query("UPDATE audit_history_lane SET action = 'forged'")).rejects.toThrow(/permission denied/);
    await expect(t.app.query('DELETE FROM audit_history_lane')).rejects.toThrow(/permission denied/);
    await expect(t.app.query('INSERT INTO audit_history_moves (txid) VALUES (txid_current())')).rejects.toThrow(
      /permission denied/,
    );
    // Not even the owner deletes or changes lane rows but through the move.
    const asOwner = (sql: string) =>
      t.db.admin.transaction(async (tx) => {
        await tx.query('SET LOCAL ROLE logbook_owner');
        return tx.query(sql);
      });
    await expect(asOwner('DELETE FROM audit_history_lane')).rejects.toThrow(/append-only/);
    await expect(asOwner("UPDATE audit_history_lane SET action = 'forged'")).rejects.toThrow(/append-only/);
    await expect(asOwner('TRUNCATE audit_history_lane')).rejects.toThrow(/append-only/);
    // A row inserted into the entries with a lane row's position is sealed as any other insert, and refused: the
    // position is linked already.
    const { rows } = await t.db.admin.query<{ pos: number }>('SELECT pos FROM audit_logs WHERE id = :id::uuid', {
      id: row!.id,
    });
    await expect(
      t.app.query(
        `INSERT INTO audit_entries (pos, org_id, actor_type, actor_id, action) OVERRIDING SYSTEM VALUE
         VALUES (:pos::bigint, :orgId::uuid, 'user', gen_random_uuid(), 'forged')`,
        { pos: rows[0]!.pos, orgId },
      ),
    ).rejects.toThrow(/audit_chain_links_pos_key|duplicate key/);
    // The move's setting, set by anyone else, passes for nothing: the insert is refused, not left unsealed.
    await expect(
      t.app.transaction(async (tx) => {
        await tx.query("SELECT set_config('logbook.audit_history_move', 'on', true)");
        await tx.query(
          `INSERT INTO audit_entries (org_id, actor_type, actor_id, action) VALUES (:orgId::uuid, 'user', gen_random_uuid(), 'forged')`,
          { orgId },
        );
      }),
    ).rejects.toThrow(/only through audit_history_move/);
    // A lane row may not take an entry's id (it could never move).
    const [entry] = await appendAudit(t.app, [{ orgId }]);
    await expect(appendAudit(t.app, [{ orgId, id: entry!.id }], 'audit_history_lane')).rejects.toThrow(
      /an audit entry with this id exists/,
    );
    expect(await countWaitingHistoryRows(t.app, orgId)).toBe(1);
    expect((await verifyChain(t.app, orgId)).ok).toBe(true);
  });

  it('is cut by retention with the entries, in chain order, and its rows are taken off the counts', async () => {
    await drain();
    const { orgId } = await organization(30);
    await appendAudit(t.app, [{ orgId, timestamp: daysAgo(60), action: 'device.update' }]);
    await appendAudit(
      t.app,
      [
        { orgId, timestamp: daysAgo(50), action: 'user.login' },
        { orgId, timestamp: daysAgo(40), action: 'user.login' },
        { orgId, timestamp: daysAgo(10), action: 'user.login' },
      ],
      'audit_history_lane',
    );
    const run = await retention();
    expect(run.organizations.find((org) => org.orgId === orgId)).toMatchObject({ rowsDeleted: 3 });
    expect(await tables(orgId)).toEqual(['audit_history_lane', 'audit_entries']);
    expect(await counts(orgId)).toEqual(
      expect.arrayContaining([
        { action: 'device.update', n: 0 },
        { action: 'user.login', n: 1 },
      ]),
    );
    expect((await verifyChain(t.app, orgId)).ok).toBe(true);
  });

  it('never cuts beside a move: the retention run waits for the move in progress, then cuts what moved', async () => {
    await drain();
    const { orgId } = await organization(30);
    await appendAudit(
      t.app,
      history(orgId, 3).map((row) => ({ ...row, timestamp: daysAgo(60) })),
      'audit_history_lane',
    );
    let cut: Promise<unknown> | undefined;
    await t.db.admin.transaction(async (tx) => {
      // A move holding its lock, as audit_history_move does for its transaction.
      await tx.query('SELECT pg_advisory_xact_lock(2, 0)');
      cut = retention();
      // The cut waits on the move's lock (an event the server reports), not on a guessed time.
      for (;;) {
        const { rows } = await t.db.admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'logbook_audit_admin' AND wait_event = 'advisory'`,
        );
        if (rows[0]!.n > 0) break;
      }
    });
    await cut;
    expect(await countWaitingHistoryRows(t.app, orgId)).toBe(0);
    expect(await tables(orgId)).not.toContain('audit_history_lane');
    expect((await verifyChain(t.app, orgId)).ok).toBe(true);
  });

  it('passes over a lane row whose id an entry took, and moves the others', async () => {
    await drain();
    const { orgId } = await organization();
    const [waiting] = await appendAudit(t.app, history(orgId, 3), 'audit_history_lane');
    // Only an insert naming its id can do this; no writer of the service does.
    await appendAudit(t.app, [{ orgId, id: waiting!.id }]);
    expect(await moveHistoryBatch(t.app, 10)).toEqual({ moved: 2, waiting: false });
    expect(await countWaitingHistoryRows(t.app, orgId)).toBe(1);
    expect(await runHistoryMove(t.app)).toBe(0);
  });

  it('hands what its time leaves to a job of its own, and the daily retention run arms the move of rows left waiting', async () => {
    await drain();
    const { orgId } = await organization();
    await appendAudit(t.app, history(orgId, 3), 'audit_history_lane');
    expect(await movesArmedBy(() => runHistoryMove(t.app, { budgetMs: 0, batch: 1 }))).toBe(1);
    expect(await countWaitingHistoryRows(t.app, orgId)).toBe(2);
    expect(await movesArmedBy(retention)).toBe(1);
    await drain();
    expect(await movesArmedBy(retention)).toBe(0);
    expect(await movesArmedBy(() => runHistoryMove(t.app))).toBe(0);
  });
});
