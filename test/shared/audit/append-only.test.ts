import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selectLatestCheckpoint } from '#shared/audit/store.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { Db } from '#shared/db/db.ts';
import { appendAudit, appendOne, readChain, type Sealed, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

async function chainOf(length: number): Promise<{ orgId: string; sealed: Sealed[] }> {
  const orgId = randomUUID();
  return {
    orgId,
    sealed: await appendAudit(
      t.app,
      Array.from({ length }, () => ({ orgId })),
    ),
  };
}

/** Runs `sql` as logbook_owner: a superuser connection that SET ROLEs to the schema owner. */
const asOwner = (sql: string, params = {}) =>
  t.db.admin.transaction(async (tx) => {
    await tx.query('SET LOCAL ROLE logbook_owner');
    return tx.query(sql, params);
  });

/** Deletes the links `where` selects (on org_id and seq) and their entries, in one statement, as retention does. */
const cutSql = (where: string) =>
  `WITH link AS (DELETE FROM audit_chain_links WHERE ${where} RETURNING pos) DELETE FROM audit_entries WHERE pos IN (SELECT pos FROM link)`;

/** Runs `sql` on `db` with the retention flag set for the transaction (SET LOCAL). */
const withRetentionFlag = (db: Db, sql: string, params = {}) =>
  db.transaction(async (tx) => {
    await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
    return tx.query(sql, params);
  });

describe('the API role logbook_app', () => {
  it('holds only SELECT and INSERT on audit entries and intents, and only SELECT on links, the view, heads and checkpoints', async () => {
    const { rows } = await t.db.admin.query<{ table: string; privilege: string }>(
      `SELECT t AS table, p AS privilege
         FROM unnest(ARRAY['audit_entries', 'audit_intents', 'audit_chain_links', 'audit_logs', 'audit_chain_heads', 'audit_chain_checkpoints']) t,
              unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
        WHERE has_table_privilege('logbook_app', t, p)
        ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { table: 'audit_chain_checkpoints', privilege: 'SELECT' },
      { table: 'audit_chain_heads', privilege: 'SELECT' },
      { table: 'audit_chain_links', privilege: 'SELECT' },
      { table: 'audit_entries', privilege: 'INSERT' },
      { table: 'audit_entries', privilege: 'SELECT' },
      { table: 'audit_intents', privilege: 'INSERT' },
      { table: 'audit_intents', privilege: 'SELECT' },
      { table: 'audit_logs', privilege: 'SELECT' },
    ]);
  });

  it('removes a committed audit intent only by sealing it into the trail', async () => {
    const orgId = crypto.randomUUID();
    await t.app.transaction((tx) =>
      tx.query('SELECT ids, failure FROM audit_intents_add(:entries::jsonb)', {
        entries: [
          {
            orgId,
            timestamp: null,
            actorType: 'system',
            actorId: '00000000-0000-0000-0000-000000000000',
            actorEmail: null,
            action: 'device.update',
            resourceType: 'device',
            resourceId: null,
            resourceName: 'WS-intent',
            details: {},
            ipAddress: null,
            userAgent: null,
            result: 'success',
            errorMessage: null,
          },
        ],
      }),
    );
    const params = { orgId };
    await expect(t.app.query('DELETE FROM audit_intents WHERE org_id = :orgId::uuid', params)).rejects.toThrow(
      /permission denied/,
    );
    await expect(
      t.app.query(`UPDATE audit_intents SET entry = '{}' WHERE org_id = :orgId::uuid`, params),
    ).rejects.toThrow(/permission denied/);
    const { rows } = await t.app.query<{ id: string }>(
      'SELECT id::text AS id FROM audit_intents WHERE org_id = :orgId::uuid',
      params,
    );
    const sealed = await t.app.query('SELECT sealed_id FROM audit_intents_seal(:ids::jsonb)', {
      ids: rows.map((row) => row.id),
    });
    expect(sealed.rowCount).toBe(1);
    const trail = await t.db.admin.query('SELECT 1 FROM audit_logs WHERE org_id = :orgId::uuid', params);
    expect(trail.rowCount).toBe(1);
  });

  it('cannot update, delete or truncate audit rows, entries or links', async () => {
    const { orgId } = await chainOf(2);
    const params = { orgId };
    for (const table of ['audit_entries', 'audit_chain_links']) {
      await expect(
        t.app.query(`UPDATE ${table} SET org_id = gen_random_uuid() WHERE org_id = :orgId::uuid`, params),
      ).rejects.toThrow(/permission denied/);
      await expect(t.app.query(`DELETE FROM ${table} WHERE org_id = :orgId::uuid`, params)).rejects.toThrow(
        /permission denied/,
      );
      await expect(t.app.query(`TRUNCATE ${table}`)).rejects.toThrow(/permission denied/);
      await expect(
        withRetentionFlag(t.app, `DELETE FROM ${table} WHERE org_id = :orgId::uuid`, params),
      ).rejects.toThrow(/permission denied/);
    }
    // The view of both is read-only.
    await expect(t.app.query('INSERT INTO audit_logs (org_id) VALUES (:orgId::uuid)', params)).rejects.toThrow(
      /cannot insert into view "audit_logs"/,
    );
    expect(await readChain(t.app, orgId)).toHaveLength(2);
  });

  it('cannot move a head or write a checkpoint', async () => {
    const { orgId } = await chainOf(1);
    await expect(
      t.app.query(`UPDATE audit_chain_heads SET seq = 7 WHERE org_id = :orgId::uuid`, { orgId }),
    ).rejects.toThrow(/permission denied/);
    await expect(
      t.app.query(`INSERT INTO audit_chain_checkpoints (org_id, seq, checksum) VALUES (:orgId::uuid, 1, 'x')`, {
        orgId,
      }),
    ).rejects.toThrow(/permission denied/);
  });
});

describe('the owner logbook_owner', () => {
  it('is refused UPDATE, DELETE and TRUNCATE of entries and links by the triggers', async () => {
    const { orgId } = await chainOf(2);
    await expect(
      asOwner(`UPDATE audit_entries SET action = 'device.create' WHERE org_id = :orgId::uuid`, { orgId }),
    ).rejects.toThrow(/audit_entries is append-only: UPDATE refused/);
    await expect(
      asOwner(`UPDATE audit_chain_links SET checksum = checksum WHERE org_id = :orgId::uuid`, { orgId }),
    ).rejects.toThrow(/audit_chain_links is append-only: UPDATE refused/);
    await expect(asOwner('DELETE FROM audit_entries WHERE org_id = :orgId::uuid', { orgId })).rejects.toThrow(
      /audit_entries is append-only: DELETE refused/,
    );
    await expect(asOwner('DELETE FROM audit_chain_links WHERE org_id = :orgId::uuid', { orgId })).rejects.toThrow(
      /audit_chain_links is append-only: DELETE refused/,
    );
    await expect(asOwner('TRUNCATE audit_entries')).rejects.toThrow(/audit_entries is append-only: TRUNCATE refused/);
    await expect(asOwner('TRUNCATE audit_chain_links')).rejects.toThrow(
      /audit_chain_links is append-only: TRUNCATE refused/,
    );
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 2 });
  });

  it('is refused any direct write to links, heads and checkpoints', async () => {
    const { orgId } = await chainOf(1);
    for (const sql of [
      `INSERT INTO audit_chain_links (org_id, seq, pos, checksum) VALUES (:orgId::uuid, 2, 0, 'x')`,
      'UPDATE audit_chain_heads SET seq = 7 WHERE org_id = :orgId::uuid',
      'DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid',
      'TRUNCATE audit_chain_heads',
      `INSERT INTO audit_chain_heads (org_id, seq, checksum) VALUES (gen_random_uuid(), 1, 'x')`,
      `INSERT INTO audit_chain_checkpoints (org_id, seq, checksum) VALUES (:orgId::uuid, 1, 'x')`,
      'UPDATE audit_chain_checkpoints SET seq = 7',
      'DELETE FROM audit_chain_checkpoints',
      'TRUNCATE audit_chain_checkpoints',
    ]) {
      await expect(asOwner(sql, sql.includes(':orgId') ? { orgId } : {}), sql).rejects.toThrow(
        /is written only by the audit triggers/,
      );
    }
  });
});

describe('retention by the audit-admin role logbook_audit_admin', () => {
  it('is refused without the session flag', async () => {
    const { orgId } = await chainOf(3);
    await expect(t.auditAdmin.query(cutSql('org_id = :orgId::uuid AND seq = 1'), { orgId })).rejects.toThrow(
      /is append-only: DELETE refused/,
    );
  });

  it('deletes the oldest rows with SET LOCAL logbook.audit_retention and records the cut as a checkpoint', async () => {
    const { orgId, sealed } = await chainOf(4);
    const { rowCount } = await withRetentionFlag(t.auditAdmin, cutSql('org_id = :orgId::uuid AND seq <= 2'), {
      orgId,
    });
    expect(rowCount).toBe(2);
    // A cut by hand is not signed by the worker: the verifiers with the evidence refuse it.
    expect(await selectLatestCheckpoint(t.app, orgId)).toEqual({ seq: 2, checksum: sealed[1]!.checksum, signed: null });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 2 });
  });

  it('cannot cut anything but the oldest contiguous rows, even with the flag', async () => {
    const { orgId } = await chainOf(4);
    await expect(
      withRetentionFlag(t.auditAdmin, cutSql('org_id = :orgId::uuid AND seq = 2'), { orgId }),
    ).rejects.toThrow(/only the oldest contiguous audit rows/);
    await expect(
      withRetentionFlag(t.auditAdmin, `UPDATE audit_entries SET action = 'x' WHERE org_id = :orgId::uuid`, { orgId }),
    ).rejects.toThrow(/permission denied/);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 4 });
  });

  it('cannot delete an entry and keep its link: entries go only with their links', async () => {
    const { orgId } = await chainOf(2);
    await expect(
      withRetentionFlag(t.auditAdmin, 'DELETE FROM audit_entries WHERE org_id = :orgId::uuid', { orgId }),
    ).rejects.toThrow(/deletes an audit entry only with its chain link/);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 2 });
  });

  it('is not granted to a session that merely SET ROLEs to it', async () => {
    const { orgId } = await chainOf(2);
    const attempt = t.db.admin.transaction(async (tx) => {
      await tx.query('SET LOCAL ROLE logbook_audit_admin');
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      return tx.query(cutSql('org_id = :orgId::uuid AND seq = 1'), { orgId });
    });
    await expect(attempt).rejects.toThrow(/is append-only: DELETE refused/);
  });

  it('may cut a whole chain; the next row continues it from the head', async () => {
    const { orgId, sealed } = await chainOf(3);
    await withRetentionFlag(t.auditAdmin, cutSql('org_id = :orgId::uuid'), { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 0 });
    const next = await appendOne(t.app, { orgId });
    expect(next).toMatchObject({ seq: 4, prevChecksum: sealed[2]!.checksum });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 1 });
  });
});
