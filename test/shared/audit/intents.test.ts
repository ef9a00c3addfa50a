import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import {
  type AuditContext,
  auditChange,
  flushAudit,
  sealWaitingIntents,
  toAuditRow,
  zeroUuid,
} from '#shared/audit/writer.ts';
import type { Db, Tx } from '#shared/db/db.ts';
import { useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

/**
 * Commits a change's audit intents as the API's role, as auditChange writes them, and leaves them unsealed: a process
 * that stopped between the commit and the seal.
 */
async function leaveIntents(orgId: string, names: string[]): Promise<void> {
  const entries = names.map((name) =>
    toAuditRow({ orgId, actorType: 'system', actorId: zeroUuid, action: 'device.update', resourceName: name }),
  );
  await t.app.transaction((tx) => tx.query('SELECT ids, failure FROM audit_intents_add(:entries::jsonb)', { entries }));
}

const trail = async (orgId: string) =>
  (
    await t.db.admin.query<{ name: string }>(
      'SELECT resource_name AS name FROM audit_logs WHERE org_id = :orgId::uuid ORDER BY seq',
      { orgId },
    )
  ).rows.map((row) => row.name);

const waiting = async (orgId: string) =>
  (
    await t.db.admin.query<{ name: string }>(
      `SELECT entry->>'resourceName' AS name FROM audit_intents WHERE org_id = :orgId::uuid ORDER BY id`,
      { orgId },
    )
  ).rows.map((row) => row.name);

/** A transaction that runs `first`, stays open until `release()`, then runs `last`; `held` once `first` is done. */
function heldTransaction<T>(db: Db, first: (tx: Tx) => Promise<unknown>, last: (tx: Tx) => Promise<T>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding!: () => void;
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const ended = db.transaction(async (tx) => {
    await first(tx);
    holding();
    await released;
    return last(tx);
  });
  return { held, release, ended };
}

/** Until a statement whose text is like `like` waits for a lock, or `done()` says it finished without waiting. */
async function untilWaitingForLock(like: string, done: () => boolean): Promise<void> {
  for (;;) {
    const { rows } = await t.db.admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE :like::text`,
      { like },
    );
    if (done() || rows[0]!.n > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('the sweep of committed audit intents', () => {
  it('seals what a change committed and nobody sealed, in order and once, as the API role', async () => {
    const orgId = randomUUID();
    await leaveIntents(orgId, ['WS-1', 'WS-2']);
    await leaveIntents(orgId, ['WS-3']);
    expect(await waiting(orgId)).toEqual(['WS-1', 'WS-2', 'WS-3']);
    const [first, second] = await Promise.all([sealWaitingIntents(t.app), sealWaitingIntents(t.app)]);
    expect(first! + second!).toBe(3);
    expect(await trail(orgId)).toEqual(['WS-1', 'WS-2', 'WS-3']);
    expect(await waiting(orgId)).toEqual([]);
    expect(await verifyChain(t.db.admin, orgId)).toMatchObject({ ok: true });
  });

  it('passes over an intent the trail refuses, keeps it, and seals the ones after it', async () => {
    const orgId = randomUUID();
    await leaveIntents(orgId, ['WS-before']);
    await leaveIntents(orgId, ['WS-refused']);
    await leaveIntents(orgId, ['WS-after']);
    // An entry the trail's check refuses (a timestamp past year 9999), as a bug or a hand edit could leave one.
    await t.db.admin.query(
      `UPDATE audit_intents SET entry = jsonb_set(entry, '{timestamp}', '"10000-01-02T00:00:00Z"')
        WHERE entry->>'resourceName' = 'WS-refused'`,
    );
    expect(await sealWaitingIntents(t.app)).toBe(2);
    expect(await trail(orgId)).toEqual(['WS-before', 'WS-after']);
    expect(await waiting(orgId)).toEqual(['WS-refused']);
    // A later sweep passes over it again, and seals what came since.
    await leaveIntents(orgId, ['WS-later']);
    expect(await sealWaitingIntents(t.app)).toBe(1);
    expect(await trail(orgId)).toEqual(['WS-before', 'WS-after', 'WS-later']);
    await t.db.admin.query('DELETE FROM audit_intents WHERE org_id = :orgId::uuid', { orgId });
  });

  it('a request seals its own intents after the commit; a change rolled back leaves none', async () => {
    const orgId = randomUUID();
    const context: AuditContext = { db: t.app, caller: null, pending: [] };
    await t.app.transaction((tx) =>
      auditChange(tx, context, { orgId, action: 'device.update', resourceType: 'device', resourceName: 'WS-kept' }),
    );
    await expect(
      t.app.transaction(async (tx) => {
        await auditChange(tx, context, {
          orgId,
          action: 'device.update',
          resourceType: 'device',
          resourceName: 'WS-rolled-back',
        });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await flushAudit(context);
    expect(await trail(orgId)).toEqual(['WS-kept']);
    expect(await waiting(orgId)).toEqual([]);
  });
  it('two seals handed intents in common, in any order, wait for each other instead of deadlocking', async () => {
    const orgId = randomUUID();
    const names = Array.from({ length: 200 }, (_, i) => `WS-${String(i).padStart(3, '0')}`);
    await leaveIntents(orgId, names);
    // Stored newest first, as a busy table's reused space can leave them: a scan meets them against their id order.
    await t.db.admin.query(
      `WITH gone AS (DELETE FROM audit_intents WHERE org_id = :orgId::uuid RETURNING *)
       INSERT INTO audit_intents (id, org_id, entry, created_at) OVERRIDING SYSTEM VALUE
       SELECT id, org_id, entry, created_at FROM gone ORDER BY id DESC`,
      { orgId },
    );
    const { rows } = await t.db.admin.query<{ id: string }>(
      'SELECT id::text AS id FROM audit_intents WHERE org_id = :orgId::uuid ORDER BY id',
      { orgId },
    );
    const [first, ...rest] = rows.map((row) => row.id);
    const seal = 'SELECT sealed_id FROM audit_intents_seal(:ids::jsonb)';
    // One seal moves the first intent and keeps its transaction open; the other is handed all of them, newest first.
    const one = heldTransaction(
      t.app,
      (tx) => tx.query(seal, { ids: [first] }),
      async (tx) => (await tx.query(seal, { ids: rest })).rows.length + 1,
    );
    await one.held;
    let done = false;
    const other = t.app
      .transaction(async (tx) => (await tx.query(seal, { ids: [...rest].reverse().concat(first!) })).rows.length)
      .finally(() => {
        done = true;
      });
    // The other waits for the first intent's lock, holding none of the rest: the open seal then moves them.
    await untilWaitingForLock('%audit_intents_seal%', () => done);
    one.release();
    expect(await one.ended).toBe(200);
    expect(await other).toBe(0);
    expect(await trail(orgId)).toEqual(names);
    expect(await waiting(orgId)).toEqual([]);
    expect(await verifyChain(t.db.admin, orgId)).toMatchObject({ ok: true });
  });
  it('the sweep waits for an intent another statement holds, so the chain keeps the intents in order', async () => {
    const orgId = randomUUID();
    await leaveIntents(orgId, ['WS-alert.create']);
    await leaveIntents(orgId, ['WS-ticket.create']);
    const { rows } = await t.db.admin.query<{ id: string }>(
      'SELECT id::text AS id FROM audit_intents WHERE org_id = :orgId::uuid ORDER BY id LIMIT 1',
      { orgId },
    );
    // Another statement holds the earlier intent (as a seal moving it does) while the sweep runs.
    const holder = heldTransaction(
      t.db.admin,
      (tx) => tx.query('SELECT id FROM audit_intents WHERE id = :id::bigint FOR UPDATE', { id: rows[0]!.id }),
      async () => undefined,
    );
    await holder.held;
    let done = false;
    const swept = sealWaitingIntents(t.app).finally(() => {
      done = true;
    });
    await untilWaitingForLock('%audit_intents_sweep%', () => done);
    holder.release();
    await holder.ended;
    expect(await swept).toBe(2);
    expect(await trail(orgId)).toEqual(['WS-alert.create', 'WS-ticket.create']);
    expect(await verifyChain(t.db.admin, orgId)).toMatchObject({ ok: true });
  });
});
