import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { appendAudit, forgedRow, insertForged, type Sealed, tamper } from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const VERIFY = '/api/v1/audit-logs/verify';
const t = useApi();
let a: Tenant;
let b: Tenant;
let rows: Sealed[];

const verify = (query: string, token: string) => t.api.request('GET', `${VERIFY}${query}`, { token });
const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 10, minute)).toISOString();
/** The head of a's chain: its fourth and last row. */
const head = () => ({ seq: 4, checksum: rows[3]!.checksum });

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  rows = await appendAudit(
    t.db.admin,
    [1, 2, 3, 4].map((minute) => ({ orgId: a.orgId, timestamp: at(minute) })),
  );
});

describe('GET /audit-logs/verify', () => {
  it('names a row written past the service by its id, whatever form of UUID it carries, and lists it as it is', async () => {
    const tenant = await createTenant(t.api, 'Forged');
    const [sealed] = await appendAudit(t.db.admin, [{ orgId: tenant.orgId, timestamp: at(1) }]);
    // Hex in the 8-4-4-4-12 form, but neither a version nor an RFC 4122 variant: PostgreSQL's uuid takes it.
    const id = '12345678-1234-1234-1234-123456789abc';
    await insertForged(t.db.admin, { ...forgedRow(tenant.orgId, 2, sealed!.checksum), id });
    expect((await verify('', tenant.orgToken)).body).toMatchObject({ ok: false, firstBreak: { seq: 2, id } });
    const list = await t.api.request('GET', '/api/v1/audit-logs', { token: tenant.orgToken });
    expect(list.body.entries.map((entry: { id: string }) => entry.id)).toContain(id);
  });

  it("verifies an organization user's own chain", async () => {
    const reply = await verify('', a.orgToken);
    expect(reply).toMatchObject({ status: 200, body: { ok: true, checked: 4 } });
    expect(reply.body).toEqual({ ok: true, checked: 4, head: head() });
  });

  it("answers the organization's chain head (seq and checksum), to keep and compare outside the database", async () => {
    expect((await verify('', a.orgToken)).body.head).toEqual({ seq: 4, checksum: rows[3]!.checksum });
    // A window verifies part of the chain; the head is still the whole chain's.
    expect((await verify(`?from=${at(1)}&to=${at(2)}`, a.orgToken)).body).toEqual({
      ok: true,
      checked: 3,
      head: head(),
    });
    expect((await verify('', b.orgToken)).body).toEqual({ ok: true, checked: 0, head: null });
  });

  it('verifies the rows of a time window (and the links at its edges)', async () => {
    const reply = await verify(`?from=${at(2)}&to=${at(3)}`, a.orgToken);
    expect(reply.body).toEqual({ ok: true, checked: 4, head: head() });
    expect((await verify(`?from=${at(30)}`, a.orgToken)).body).toEqual({ ok: true, checked: 0, head: head() });
  });

  it('needs orgId from partner and platform users (400), and verifies any organization of theirs, a deleted one too', async () => {
    const missing = await verify('', a.partnerToken);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [expect.objectContaining({ path: 'query.orgId' })],
    });
    expect((await verify(`?orgId=${a.orgId}`, a.partnerToken)).body).toEqual({ ok: true, checked: 4, head: head() });
    expect((await verify(`?orgId=${a.orgId}`, await platformAdmin())).body.ok).toBe(true);
    const gone = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Gone' } })).body.id;
    await appendAudit(t.db.admin, [{ orgId: gone }]);
    await t.api.request('DELETE', `${ORGS}/${gone}`, { token: a.partnerToken });
    expect((await verify(`?orgId=${gone}`, a.partnerToken)).body).toMatchObject({ ok: true });
  });

  it("answers 404 for another tenant's organization or one that does not exist", async () => {
    for (const [query, token] of [
      [`?orgId=${a.orgId}`, b.partnerToken],
      [`?orgId=${a.orgId}`, b.orgToken],
      [`?orgId=${randomUUID()}`, await platformAdmin()],
    ] as const) {
      const reply = await verify(query, token);
      expect(reply.status, query).toBe(404);
      expect(reply.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('needs audit:read (403)', async () => {
    const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    expect((await verify('', token)).status).toBe(403);
  });

  it('reports the first break of a tampered chain', async () => {
    await tamper(t.db.admin, (tx) =>
      tx.query(`UPDATE audit_entries SET action = 'device.delete' WHERE id = :id::uuid`, { id: rows[2]!.id }),
    );
    const reply = await verify('', a.orgToken);
    expect(reply.body).toEqual({
      ok: false,
      checked: 3,
      firstBreak: {
        seq: rows[2]!.seq,
        id: rows[2]!.id,
        kind: 'altered',
        meaning: "the row's values do not match its checksum",
      },
      head: head(),
    });
  });
});
