import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateAnchorKey, publicKeyPem, verifyAnchorSignature } from '#shared/audit/anchor-signing.ts';
import { runRetention } from '#shared/audit/retention.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { logger } from '#shared/logger.ts';
import { appendAudit, deleteChainRows, forgedRow, insertForged, tamper } from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ANCHORS = '/api/v1/audit-logs/anchors';
const VERIFY = '/api/v1/audit-logs/verify';
const t = useApi();
const key = generateAnchorKey();
let a: Tenant;
let b: Tenant;
let auditAdmin: Db;
const previousKey = process.env.AUDIT_ANCHOR_PRIVATE_KEY;

beforeAll(async () => {
  // The API publishes the public half of the configured key.
  process.env.AUDIT_ANCHOR_PRIVATE_KEY = key.export({ type: 'pkcs8', format: 'pem' }).toString();
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  await appendAudit(t.db.admin, [{ orgId: a.orgId }, { orgId: a.orgId }, { orgId: a.orgId }]);
  await appendAudit(t.db.admin, [{ orgId: b.orgId }]);
  auditAdmin = createPgDb({ connectionString: t.db.urls.auditAdmin, max: 1 });
  await runRetention(auditAdmin);
});

afterAll(async () => {
  await auditAdmin?.close();
  if (previousKey === undefined) delete process.env.AUDIT_ANCHOR_PRIVATE_KEY;
  else process.env.AUDIT_ANCHOR_PRIVATE_KEY = previousKey;
});

describe('GET /audit-logs/anchors', () => {
  it("lists the caller's organization's signed anchors with the published key, which verifies them", async () => {
    const reply = await t.api.request('GET', ANCHORS, { token: a.orgToken });
    expect(reply.status).toBe(200);
    expect(reply.body.publicKey).toBe(publicKeyPem(key));
    expect(reply.body.data.map((anchor: { orgId: string }) => anchor.orgId)).toContain(a.orgId);
    const own = reply.body.data.filter((anchor: { orgId: string }) => anchor.orgId === a.orgId);
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ seq: expect.any(Number), keyId: reply.body.keyId });
    expect(verifyAnchorSignature(own[0], createPublicKey(reply.body.publicKey))).toBe(true);
    expect(reply.body.pagination).toMatchObject({ page: 1, total: reply.body.data.length });
  });

  it("never shows another tenant's anchors", async () => {
    for (const [token, own, other] of [
      [a.orgToken, a, b],
      [b.orgToken, b, a],
      [a.partnerToken, a, b],
    ] as const) {
      const reply = await t.api.request('GET', ANCHORS, { token });
      const orgs = new Set(reply.body.data.map((anchor: { orgId: string }) => anchor.orgId));
      expect(orgs.has(own.orgId)).toBe(true);
      expect(orgs.has(other.orgId)).toBe(false);
      const narrowed = await t.api.request('GET', `${ANCHORS}?orgId=${other.orgId}`, { token });
      expect(narrowed.body.data).toEqual([]);
    }
    const all = await t.api.request('GET', `${ANCHORS}?orgId=${b.orgId}`, { token: await platformAdmin() });
    expect(all.body.data.map((anchor: { orgId: string }) => anchor.orgId)).toEqual([b.orgId]);
  });

  it('GET /verify checks the newest anchor, and catches a wholesale rewrite a bare chain cannot', async () => {
    const before = await t.api.request('GET', `${VERIFY}`, { token: a.orgToken });
    const anchoredSeq = before.body.anchor.seq;
    expect(before.body).toMatchObject({ ok: true, anchor: { seq: anchoredSeq, ok: true } });

    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId: a.orgId }));
    let prev: string | null = null;
    for (let seq = 1; seq <= anchoredSeq; seq++) {
      const row = forgedRow(a.orgId, seq, prev);
      await insertForged(t.db.admin, row);
      prev = row.checksum;
    }
    await tamper(t.db.admin, (tx) =>
      tx.query(
        'UPDATE audit_chain_heads SET seq = :seq::bigint, checksum = :checksum::text WHERE org_id = :orgId::uuid',
        { orgId: a.orgId, seq: anchoredSeq, checksum: prev },
      ),
    );
    const after = await t.api.request('GET', `${VERIFY}`, { token: a.orgToken });
    expect(after.body).toMatchObject({
      ok: false,
      firstBreak: { seq: anchoredSeq },
      anchor: { seq: anchoredSeq, ok: false },
    });
    // The watch reports it and anchors nothing more.
    const error = vi.spyOn(logger, 'error').mockImplementation(() => undefined);
    const run = await runRetention(auditAdmin);
    error.mockRestore();
    expect(run.integrity!.failures.map((f) => f.orgId)).toContain(a.orgId);
  });

  it('needs audit:read', async () => {
    expect((await t.api.request('GET', ANCHORS)).status).toBe(401);
  });
});
