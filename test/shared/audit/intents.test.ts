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
});
