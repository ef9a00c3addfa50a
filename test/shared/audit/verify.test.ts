import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import {
  appendAudit,
  appendOne,
  deleteChainRows,
  forgedRow,
  insertForged,
  insertUnsealed,
  type Sealed,
  tamper,
  updateChainRows,
  useAuditDatabase,
} from './audit-rows.ts';

const t = useAuditDatabase();

/** Day `n` of May 2024, the timestamp of the n-th row of a dated chain. */
const day = (n: number) => `2024-05-${String(n).padStart(2, '0')}T12:00:00.000000Z`;

async function chainOf(length: number, dated = false): Promise<{ orgId: string; sealed: Sealed[] }> {
  const orgId = randomUUID();
  return {
    orgId,
    sealed: await appendAudit(
      t.app,
      Array.from({ length }, (_, i) => ({ orgId, timestamp: dated ? day(i + 1) : undefined })),
    ),
  };
}

const run = (sql: string, params: Record<string, string | number>) => tamper(t.db.admin, (tx) => tx.query(sql, params));
const runDelete = (where: string, params: Record<string, string | number>) =>
  tamper(t.db.admin, (tx) => deleteChainRows(tx, where, params));
const runUpdate = (set: string, where: string, params: Record<string, string | number>) =>
  tamper(t.db.admin, (tx) => updateChainRows(tx, set, where, params));

/** Replaces row `seq` by a forged row that is consistent in itself and links to the row before it. */
async function replaceRow(orgId: string, sealed: Sealed[], seq: number) {
  await runDelete('org_id = :orgId::uuid AND seq = :seq::bigint', { orgId, seq });
  await insertForged(t.db.admin, forgedRow(orgId, seq, sealed[seq - 2]?.checksum ?? null));
}

describe('verifying a chain', () => {
  it('finds an untouched chain intact and counts the rows it checked', async () => {
    const { orgId } = await chainOf(5);
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 5 });
  });

  it('finds nothing to check for an organization without rows', async () => {
    expect(await verifyChain(t.app, randomUUID())).toEqual({ ok: true, checked: 0 });
  });

  it.each([
    ['action', `action = 'device.create'`],
    ['details', `details = details || '{"approved": true}'`],
    ['timestamp by one microsecond', `timestamp = timestamp + interval '1 microsecond'`],
    ['actor e-mail', `actor_email = 'someone.else@example.com'`],
    ['result', `result = 'denied'`],
    ['a null field', `error_message = ''`],
    ['checksum', `checksum = repeat('0', 64)`],
  ])('finds an altered %s at the row that was changed', async (_field, change) => {
    const { orgId, sealed } = await chainOf(5);
    await runUpdate(change, 'org_id = :orgId::uuid AND seq = 3', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 3,
      firstBreak: { seq: 3, id: sealed[2]!.id, kind: 'altered' },
    });
  });

  it('finds a deleted middle row missing at its position', async () => {
    const { orgId } = await chainOf(5);
    await runDelete('org_id = :orgId::uuid AND seq = 3', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 2,
      firstBreak: { seq: 3, id: null, kind: 'missing' },
    });
  });

  it('finds a forged row appended past the head as inserted, even when its checksum and link are right', async () => {
    const { orgId, sealed } = await chainOf(5);
    const forged = forgedRow(orgId, 6, sealed[4]!.checksum);
    await insertForged(t.db.admin, forged);
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 5,
      firstBreak: { seq: 6, id: forged.id, kind: 'inserted' },
    });
  });

  it('finds an entry stored without a link (the sealing trigger off) as inserted at no position', async () => {
    const { orgId } = await chainOf(3);
    const id = await insertUnsealed(t.db.admin, orgId);
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 3,
      firstBreak: { seq: 0, id, kind: 'inserted' },
    });
    // It is no row of the trail: readers, which read entries with their links, do not show it.
    const { rows } = await t.app.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM audit_logs WHERE org_id = :orgId::uuid',
      {
        orgId,
      },
    );
    expect(rows[0]!.n).toBe(3);
  });

  it('finds entries stored without links for an organization that has no chain at all', async () => {
    const orgId = randomUUID();
    const id = await insertUnsealed(t.db.admin, orgId);
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 0,
      firstBreak: { seq: 0, id, kind: 'inserted' },
    });
  });

  it('finds a forged replacement of a middle row through the link of the next row', async () => {
    const { orgId, sealed } = await chainOf(5);
    await replaceRow(orgId, sealed, 3);
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 4,
      firstBreak: { seq: 4, id: sealed[3]!.id, kind: 'link' },
    });
  });

  it('finds a forged replacement of the last row through the head', async () => {
    const { orgId, sealed } = await chainOf(3);
    await replaceRow(orgId, sealed, 3);
    expect(await verifyChain(t.app, orgId)).toMatchObject({ ok: false, firstBreak: { seq: 3, kind: 'link' } });
  });

  it('finds a deleted tail through the head', async () => {
    const { orgId } = await chainOf(5);
    await runDelete('org_id = :orgId::uuid AND seq >= 4', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 3,
      firstBreak: { seq: 4, id: null, kind: 'missing' },
    });
  });

  it('finds a chain whose rows were all deleted', async () => {
    const { orgId } = await chainOf(3);
    await runDelete('org_id = :orgId::uuid', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 0,
      firstBreak: { seq: 1, id: null, kind: 'missing' },
    });
  });

  it('finds oldest rows deleted without a retention checkpoint missing', async () => {
    const { orgId } = await chainOf(5);
    await runDelete('org_id = :orgId::uuid AND seq <= 2', { orgId });
    expect(await verifyChain(t.app, orgId)).toMatchObject({
      ok: false,
      firstBreak: { seq: 1, id: null, kind: 'missing' },
    });
  });

  it('finds the head of an organization removed: what followed its last row is missing', async () => {
    const { orgId } = await chainOf(2);
    await run('DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 2,
      firstBreak: { seq: 3, id: null, kind: 'missing' },
    });
  });

  it('finds a tail deleted together with the head missing after the last remaining row', async () => {
    const { orgId } = await chainOf(5);
    await runDelete('org_id = :orgId::uuid AND seq >= 4', { orgId });
    await run('DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 3,
      firstBreak: { seq: 4, id: null, kind: 'missing' },
    });
  });

  it('finds a chain cut whole by retention whose head was then removed: missing after the checkpoint', async () => {
    const { orgId } = await chainOf(3);
    await t.auditAdmin.transaction(async (tx) => {
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      await deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId });
    });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 0 });
    await run('DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 0,
      firstBreak: { seq: 4, id: null, kind: 'missing' },
    });
  });

  it('finds a retained chain whose head was removed missing after its last row, its pruned prefix still accepted', async () => {
    const { orgId } = await chainOf(5);
    await t.auditAdmin.transaction(async (tx) => {
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq <= 2', { orgId });
    });
    await run('DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 3,
      firstBreak: { seq: 6, id: null, kind: 'missing' },
    });
  });

  it('reports the head read in its snapshot when asked, for keeping outside the database', async () => {
    const { orgId, sealed } = await chainOf(3);
    expect(await verifyChain(t.app, orgId, { reportHead: true })).toEqual({
      ok: true,
      checked: 3,
      head: { seq: 3, checksum: sealed[2]!.checksum },
    });
    expect(await verifyChain(t.app, randomUUID(), { reportHead: true })).toEqual({ ok: true, checked: 0, head: null });
    await runDelete('org_id = :orgId::uuid AND seq = 3', { orgId });
    expect(await verifyChain(t.app, orgId, { reportHead: true })).toEqual({
      ok: false,
      checked: 2,
      firstBreak: { seq: 3, id: null, kind: 'missing' },
      head: { seq: 3, checksum: sealed[2]!.checksum },
    });
  });

  it('accepts a pruned prefix and finds a forged row below the retention checkpoint as inserted', async () => {
    const { orgId } = await chainOf(5);
    await t.auditAdmin.transaction(async (tx) => {
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq <= 2', { orgId });
    });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 3 });
    const forged = forgedRow(orgId, 2, null);
    await insertForged(t.db.admin, forged);
    expect(await verifyChain(t.app, orgId)).toEqual({
      ok: false,
      checked: 0,
      firstBreak: { seq: 2, id: forged.id, kind: 'inserted' },
    });
  });

  it("verifies an organization whose entries lie far apart among another's, page by page, and finds a change there", async () => {
    const orgId = randomUUID();
    const other = randomUUID();
    // Each of the organization's rows among five of another's: its positions are not one close range.
    await appendAudit(
      t.app,
      Array.from({ length: 36 }, (_, i) => ({ orgId: i % 6 === 0 ? orgId : other })),
    );
    const { rows: own } = await t.db.admin.query<{ id: string; pos: number }>(
      'SELECT id::text AS id, pos FROM audit_logs WHERE org_id = :orgId::uuid ORDER BY seq',
      { orgId },
    );
    expect(own.at(-1)!.pos - own[0]!.pos).toBe(30);
    expect(await verifyChain(t.app, orgId, { pageRows: 4 })).toEqual({ ok: true, checked: 6 });
    expect(await verifyChain(t.app, other, { pageRows: 7 })).toEqual({ ok: true, checked: 30 });
    await run(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: own[4]!.id });
    expect(await verifyChain(t.app, orgId, { pageRows: 4 })).toMatchObject({
      ok: false,
      firstBreak: { seq: 5, id: own[4]!.id, kind: 'altered' },
    });
  });

  it('reports progress after each page and counts every row once', async () => {
    const { orgId } = await chainOf(5);
    const progress: unknown[] = [];
    const result = await verifyChain(t.app, orgId, { pageRows: 2, onProgress: (p) => void progress.push(p) });
    expect(result).toEqual({ ok: true, checked: 5 });
    expect(progress).toEqual([
      { checked: 2, total: 5 },
      { checked: 4, total: 5 },
      { checked: 5, total: 5 },
    ]);
  });

  it('keeps pages under the byte budget, with at least one row a page', async () => {
    const orgId = randomUUID();
    await appendAudit(
      t.app,
      Array.from({ length: 4 }, () => ({ orgId, details: { blob: 'x'.repeat(3000) } })),
    );
    let pages = 0;
    const result = await verifyChain(t.app, orgId, {
      pageBytes: 100,
      onProgress: () => {
        pages += 1;
      },
    });
    expect(result).toEqual({ ok: true, checked: 4 });
    expect(pages).toBe(4);
  });

  it('reads one snapshot, so rows appended while it runs are neither checked nor taken for a broken tail', async () => {
    const { orgId } = await chainOf(4);
    const result = await verifyChain(t.app, orgId, {
      pageRows: 2,
      onProgress: () => appendOne(t.app, { orgId }).then(() => undefined),
    });
    expect(result).toEqual({ ok: true, checked: 4 });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 6 });
  });
});

describe('verifying a time window', () => {
  it('checks the rows in range, the row before them and the row after them', async () => {
    const { orgId } = await chainOf(10, true);
    expect(await verifyChain(t.app, orgId, { from: day(4), to: day(6) })).toEqual({ ok: true, checked: 5 });
    expect(await verifyChain(t.app, orgId, { from: day(9) })).toEqual({ ok: true, checked: 3 });
    expect(await verifyChain(t.app, orgId, { to: new Date(day(1)) })).toEqual({ ok: true, checked: 2 });
  });

  it('finds nothing to check in a range without rows', async () => {
    const { orgId } = await chainOf(3, true);
    expect(await verifyChain(t.app, orgId, { from: '2030-01-01T00:00:00Z', to: '2030-12-31T00:00:00Z' })).toEqual({
      ok: true,
      checked: 0,
    });
  });

  it('does not report a break outside the window and its neighbours', async () => {
    const { orgId, sealed } = await chainOf(10, true);
    await runUpdate(`action = 'device.create'`, `org_id = :orgId::uuid AND seq = 9`, { orgId });
    expect(await verifyChain(t.app, orgId, { from: day(4), to: day(6) })).toEqual({ ok: true, checked: 5 });
    expect(await verifyChain(t.app, orgId)).toMatchObject({
      firstBreak: { seq: 9, id: sealed[8]!.id, kind: 'altered' },
    });
  });

  it('finds the last row of the window deleted', async () => {
    const { orgId } = await chainOf(10, true);
    await runDelete('org_id = :orgId::uuid AND seq = 6', { orgId });
    expect(await verifyChain(t.app, orgId, { from: day(4), to: day(6) })).toMatchObject({
      ok: false,
      firstBreak: { seq: 6, id: null, kind: 'missing' },
    });
  });

  it('finds the first row of the window deleted', async () => {
    const { orgId } = await chainOf(10, true);
    await runDelete('org_id = :orgId::uuid AND seq = 4', { orgId });
    expect(await verifyChain(t.app, orgId, { from: day(4), to: day(6) })).toMatchObject({
      ok: false,
      firstBreak: { seq: 4, id: null, kind: 'missing' },
    });
  });

  it('checks the link of the first row in range against its predecessor', async () => {
    const { orgId, sealed } = await chainOf(10, true);
    await replaceRow(orgId, sealed, 3);
    expect(await verifyChain(t.app, orgId, { from: day(4), to: day(6) })).toEqual({
      ok: false,
      checked: 2,
      firstBreak: { seq: 4, id: sealed[3]!.id, kind: 'link' },
    });
  });

  it('covers a late row whose timestamp is older than its position in the chain', async () => {
    const { orgId } = await chainOf(5, true);
    const late = await appendOne(t.app, { orgId, timestamp: '2024-04-15T08:00:00.000000Z' });
    expect(await verifyChain(t.app, orgId, { from: '2024-04-01T00:00:00Z', to: '2024-04-30T00:00:00Z' })).toEqual({
      ok: true,
      checked: 2,
    });
    await runUpdate(`action = 'device.create'`, `org_id = :orgId::uuid AND seq = 6`, { orgId });
    expect(await verifyChain(t.app, orgId, { from: '2024-04-01T00:00:00Z', to: '2024-04-30T00:00:00Z' })).toMatchObject(
      {
        firstBreak: { seq: 6, id: late.id, kind: 'altered' },
      },
    );
  });
});
