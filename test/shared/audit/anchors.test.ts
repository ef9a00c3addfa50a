import { createPublicKey } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  anchorKeyId,
  anchorPayload,
  generateAnchorKey,
  orgsDigest,
  publicKeyPem,
  verifyAnchorSignature,
} from '#shared/audit/anchor-signing.ts';
import { type Anchor, selectLatestAnchor } from '#shared/audit/anchor-store.ts';
import { chainBreakMeaning } from '#shared/audit/chain-break.ts';
import { runIntegrityWatch, verifyStripeJob } from '#shared/audit/integrity-watch.ts';
import { runRetention } from '#shared/audit/retention.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import type { StripeJob } from '#shared/audit/watch-plan.ts';
import { logger } from '#shared/logger.ts';
import {
  appendAudit,
  deleteChainRows,
  forgedRow,
  insertForged,
  insertUnsealed,
  type Sealed,
  tamper,
  useAuditDatabase,
} from './audit-rows.ts';

const t = useAuditDatabase();
const key = generateAnchorKey();
const publicKey = createPublicKey(publicKeyPem(key));

async function organization(): Promise<string> {
  const { rows } = await t.db.admin.query<{ id: string }>(
    `WITH partner AS (INSERT INTO partners (name) VALUES ('Anchor MSP') RETURNING id)
     INSERT INTO organizations (partner_id, name) SELECT id, 'Anchor Ltd' FROM partner RETURNING id::text AS id`,
  );
  return rows[0]!.id;
}

async function chained(length: number): Promise<{ orgId: string; sealed: Sealed[] }> {
  const orgId = await organization();
  return {
    orgId,
    sealed: await appendAudit(
      t.app,
      Array.from({ length }, () => ({ orgId })),
    ),
  };
}

/** The daily run: no policies here, so the integrity watch alone acts. */
const daily = () => runRetention(t.auditAdmin, { anchorKey: key });
const anchorsOf = (orgId: string) =>
  t.db.admin
    .query<{ n: number }>('SELECT count(*)::int AS n FROM audit_anchors WHERE org_id = :orgId::uuid', { orgId })
    .then((r) => r.rows[0]!.n);
const failureOf = (run: Awaited<ReturnType<typeof daily>>, orgId: string) =>
  run.integrity!.failures.find((f) => f.orgId === orgId);

// The watch logs every break it finds, each run: kept quiet here, and read through the spy.
const quietErrors = () => vi.spyOn(logger, 'error').mockImplementation(() => undefined);
let error: ReturnType<typeof quietErrors>;
beforeEach(() => {
  error = quietErrors();
});
afterEach(() => vi.restoreAllMocks());

describe('the integrity watch', () => {
  it('writes one signed anchor per chained organization, policy or not, of its head, boundary and the chained set', async () => {
    const a = await chained(3);
    const b = await chained(2);
    const empty = await organization();
    const run = await daily();
    const mine = run.integrity!.anchors.filter((anchor) => anchor.orgId === a.orgId || anchor.orgId === b.orgId);
    expect(mine).toHaveLength(2);
    const anchorA = mine.find((anchor) => anchor.orgId === a.orgId)!;
    const heads = await t.db.admin.query<{ orgId: string }>('SELECT org_id::text AS "orgId" FROM audit_chain_heads');
    expect(anchorA).toMatchObject({
      seq: 3,
      checksum: a.sealed[2]!.checksum,
      firstRetainedSeq: 1,
      boundaryChecksum: null,
      orgCount: heads.rows.length,
      orgsDigest: orgsDigest(heads.rows.map((h) => h.orgId)),
      keyId: anchorKeyId(key),
    });
    expect(await anchorsOf(empty)).toBe(0);
    expect(await selectLatestAnchor(t.app, a.orgId)).toEqual(anchorA);
    expect(anchorPayload(anchorA).startsWith('logbook-anchor-v1\n36:')).toBe(true);
  });

  it('signs verifiably with the published key; changing any field breaks the signature', async () => {
    const { orgId } = await chained(2);
    await daily();
    const anchor = (await selectLatestAnchor(t.app, orgId))!;
    expect(verifyAnchorSignature(anchor, publicKey)).toBe(true);
    const changes: Partial<Anchor>[] = [
      { seq: anchor.seq + 1 },
      { checksum: 'f'.repeat(64) },
      { firstRetainedSeq: 2 },
      { boundaryChecksum: 'a'.repeat(64) },
      { orgCount: anchor.orgCount + 1 },
      { orgsDigest: '0'.repeat(64) },
      { anchoredAt: '2020-01-01T00:00:00.000Z' },
      { orgId: '00000000-0000-0000-0000-000000000001' },
    ];
    for (const change of changes)
      expect(verifyAnchorSignature({ ...anchor, ...change }, publicKey), JSON.stringify(change)).toBe(false);
    expect(verifyAnchorSignature(anchor, createPublicKey(generateAnchorKey()))).toBe(false);
  });

  it('anchors are append-only: UPDATE, DELETE and TRUNCATE are refused, even to the owner', async () => {
    const { orgId } = await chained(1);
    await daily();
    for (const sql of [
      'UPDATE audit_anchors SET seq = seq + 1 WHERE org_id = :orgId::uuid',
      'DELETE FROM audit_anchors WHERE org_id = :orgId::uuid',
      'TRUNCATE audit_anchors',
    ]) {
      await expect(t.db.admin.query(sql, { orgId }), sql).rejects.toThrow(/append-only/);
    }
    await expect(t.app.query('INSERT INTO audit_anchors (org_id) VALUES (:orgId::uuid)', { orgId })).rejects.toThrow(
      /permission denied/,
    );
  });

  it('an altered row: the break is logged and no anchor is written for the organization', async () => {
    const { orgId, sealed } = await chained(3);
    await tamper(t.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: sealed[1]!.id }),
    );
    const run = await daily();
    expect(failureOf(run, orgId)).toMatchObject({ seq: 2, kind: 'altered', meaning: chainBreakMeaning.altered });
    expect(await anchorsOf(orgId)).toBe(0);
    expect(error).toHaveBeenCalledWith(
      expect.stringContaining('broken'),
      expect.objectContaining({ orgId, seq: 2, kind: 'altered' }),
    );
  });

  it('an altered row after the newest anchor is found by the next run', async () => {
    const { orgId } = await chained(2);
    await daily();
    // 3: the record of the first anchor.
    const more = await appendAudit(t.app, [{ orgId }, { orgId }]);
    await tamper(t.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: more[1]!.id }),
    );
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 5, kind: 'altered' });
    expect(await anchorsOf(orgId)).toBe(1);
  });

  it('a prefix deleted by hand (no checkpoint) is reported, not taken for retention', async () => {
    const { orgId } = await chained(4);
    await daily();
    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid AND seq <= 2', { orgId }));
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 1, kind: 'missing' });
    expect(await anchorsOf(orgId)).toBe(1);
  });

  it("a whole organization's chain deleted, head included, is reported", async () => {
    const { orgId } = await chained(2);
    await daily();
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId });
      await tx.query('DELETE FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
    });
    // The newest anchor holds a head the chain no longer has.
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 1, kind: 'anchor' });
  });

  it('entries stored unsealed for an organization without any chain are reported: no head hides them', async () => {
    const orgId = await organization();
    await insertUnsealed(t.db.admin, orgId);
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 0, kind: 'inserted' });
    expect(await anchorsOf(orgId)).toBe(0);
  });

  it('a head rolled back below the newest anchor is reported against the anchor', async () => {
    const { orgId, sealed } = await chained(3);
    await daily();
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq >= 3', { orgId });
      await tx.query('UPDATE audit_chain_heads SET seq = 2, checksum = :checksum::text WHERE org_id = :orgId::uuid', {
        orgId,
        checksum: sealed[1]!.checksum,
      });
    });
    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 2 });
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 3, kind: 'anchor' });
    const anchor = (await selectLatestAnchor(t.app, orgId))!;
    expect(await verifyChain(t.app, orgId, { anchor: { anchor, publicKey } })).toMatchObject({
      ok: false,
      anchor: { seq: 3, ok: false },
    });
  });

  it('a wholesale rewrite with recomputed checksums passes a bare verification, but not one against the anchor', async () => {
    const { orgId } = await chained(3);
    await daily();
    const anchor = (await selectLatestAnchor(t.app, orgId))!;
    // 4: the record of the first anchor.
    expect(await verifyChain(t.app, orgId, { anchor: { anchor, publicKey } })).toEqual({
      ok: true,
      checked: 4,
      anchor: { seq: 3, ok: true },
    });

    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId }));
    let prev: string | null = null;
    for (const seq of [1, 2, 3]) {
      const row = forgedRow(orgId, seq, prev);
      await insertForged(t.db.admin, row);
      prev = row.checksum;
    }
    await tamper(t.db.admin, (tx) =>
      tx.query('UPDATE audit_chain_heads SET seq = 3, checksum = :checksum::text WHERE org_id = :orgId::uuid', {
        orgId,
        checksum: prev,
      }),
    );

    expect(await verifyChain(t.app, orgId)).toEqual({ ok: true, checked: 3 });
    const against = await verifyChain(t.app, orgId, { anchor: { anchor, publicKey } });
    expect(against).toMatchObject({
      ok: false,
      firstBreak: { seq: 3, kind: 'anchor' },
      anchor: { seq: 3, ok: false },
    });
    // The watch finds it too, with the same kind, and anchors nothing.
    expect(failureOf(await daily(), orgId)).toMatchObject({ seq: 3, kind: 'anchor' });
    expect(await anchorsOf(orgId)).toBe(1);
    // A forged anchor (its checksum swapped for the forged head's) fails its signature.
    expect(
      await verifyChain(t.app, orgId, { anchor: { anchor: { ...anchor, checksum: prev! }, publicKey } }),
    ).toMatchObject({ ok: false, anchor: { ok: false } });
  });

  it('retention cuts move the boundary an anchor records, and the next run still verifies', async () => {
    const orgId = await organization();
    await t.db.admin.query('INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, 10)', {
      orgId,
    });
    const old = new Date(Date.now() - 30 * 86_400_000).toISOString();
    const sealed = await appendAudit(t.app, [{ orgId, timestamp: old }, { orgId, timestamp: old }, { orgId }]);
    await daily();
    const anchor = (await selectLatestAnchor(t.app, orgId))!;
    // Cut 1..2, then the worker's own event at 4.
    expect(anchor).toMatchObject({ seq: 4, firstRetainedSeq: 3, boundaryChecksum: sealed[1]!.checksum });
    const run = await daily();
    expect(failureOf(run, orgId)).toBeUndefined();
    expect(await anchorsOf(orgId)).toBe(2);
  });
});

describe('the integrity watch past one run (incremental)', () => {
  const dayMs = 24 * 60 * 60 * 1000;
  // A day whose number is 0 modulo 3: stripe 0 (positions 1-3) is due on it, and every third day after.
  const day0 = new Date(20_001 * dayMs + 3 * 60 * 60 * 1000);
  const on = (days: number) => new Date(day0.getTime() + days * dayMs);
  /** The watch with no time for older rows in the run: every stripe due goes to a job, run here as the worker does. */
  async function watch(at: Date, orgId: string) {
    const jobs: StripeJob[] = [];
    const run = await runIntegrityWatch(t.auditAdmin, key, {
      anchoredAt: at,
      settings: { reverifyDays: 3, stripeRows: 3, runSeconds: 0 },
      queueStripes: async (job) => void jobs.push(job),
    });
    const mine = jobs.filter((job) => job.orgId === orgId);
    const stripeFailures = [];
    for (const job of mine) {
      const failure = await verifyStripeJob(t.auditAdmin, job);
      if (failure) stripeFailures.push(failure);
    }
    return { run, jobs: mine, failure: run.failures.find((f) => f.orgId === orgId) ?? stripeFailures[0] };
  }

  it('verifies the rows written since the newest anchor every day: a break in them is found the same day', async () => {
    const { orgId } = await chained(6);
    const first = await watch(on(0), orgId);
    expect(first.run.full).toBe(false);
    expect(first.failure).toBeUndefined();
    expect((await selectLatestAnchor(t.app, orgId))!.seq).toBe(6);
    const more = await appendAudit(t.app, [{ orgId }, { orgId }]);
    await tamper(t.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: more[1]!.id }),
    );
    const next = await watch(on(1), orgId);
    // 7: the record of the first anchor; 8 and 9 the rows after it.
    expect(next.failure).toMatchObject({ orgId, seq: 9, kind: 'altered' });
    expect(await anchorsOf(orgId)).toBe(1);
  });

  it('re-verifies older rows a stripe a day, so a break in them is found within the set number of days', async () => {
    const { orgId, sealed } = await chained(9);
    await watch(on(0), orgId);
    await tamper(t.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.view' WHERE id = :id::uuid`, { id: sealed[1]!.id }),
    );
    // Days 1 and 2 verify the other stripes (4-6, then 7-9, each with the row before and after it): not row 2.
    const day1 = await watch(on(1), orgId);
    expect(day1.jobs).toEqual([{ orgId, ranges: [{ first: 4, last: 6 }], rows: 3 }]);
    expect(day1.failure).toBeUndefined();
    const day2 = await watch(on(2), orgId);
    expect(day2.jobs).toEqual([{ orgId, ranges: [{ first: 7, last: 9 }], rows: 3 }]);
    expect(day2.failure).toBeUndefined();
    // Day 3, within reverifyDays of the change: stripe 0 again, and the break.
    const day3 = await watch(on(3), orgId);
    expect(day3.failure).toMatchObject({ orgId, seq: 2, kind: 'altered' });
    expect(error).toHaveBeenCalledWith(
      expect.stringContaining('broken'),
      expect.objectContaining({ orgId, seq: 2, kind: 'altered' }),
    );
  });
});
