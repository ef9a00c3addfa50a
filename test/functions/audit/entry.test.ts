import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { appendOne, type Sealed } from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const ENTRY = '/api/v1/audit-logs/logs';
const t = useApi();
let a: Tenant;
let b: Tenant;
let row: Sealed;
let goneRow: Sealed;
const resourceId = randomUUID();

const accessRows = (id: string) =>
  t.db.admin
    .query(
      `SELECT org_id::text AS "orgId", actor_type::text AS "actorType", actor_email AS "actorEmail", resource_type AS "resourceType",
              resource_id::text AS "resourceId", details
         FROM audit_logs WHERE action = 'data.access' AND resource_id = :id::uuid`,
      { id },
    )
    .then((r) => r.rows);

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  row = await appendOne(t.db.admin, {
    orgId: a.orgId,
    timestamp: '2026-03-01T10:00:00.123456Z',
    actorEmail: 'ada@alpha.test',
    action: 'policy.update',
    resourceType: 'policy',
    resourceId,
    resourceName: 'Patch Tuesday',
    details: { actor: { name: 'Ada', role: 'org_admin' }, before: { ring: 1 }, after: { ring: 2 } },
  });
  const gone = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Gone' } })).body.id;
  goneRow = await appendOne(t.db.admin, { orgId: gone, action: 'device.delete' });
  expect((await t.api.request('DELETE', `${ORGS}/${gone}`, { token: a.partnerToken })).status).toBe(204);
});

describe('GET /audit-logs/logs/{id}', () => {
  it('answers one entry in the detailed shape', async () => {
    const reply = await t.api.request('GET', `${ENTRY}/${row.id}`, { token: a.orgToken });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id: row.id,
      timestamp: '2026-03-01T10:00:00.123456Z',
      user: { id: expect.any(String), name: 'Ada', email: 'ada@alpha.test', role: 'org_admin' },
      action: 'policy.update',
      resource: { type: 'policy', id: resourceId, name: 'Patch Tuesday' },
      category: 'policy',
      result: 'success',
      ipAddress: '203.0.113.7',
      userAgent: 'Mozilla/5.0',
      details: { actor: { name: 'Ada', role: 'org_admin' }, before: { ring: 1 }, after: { ring: 2 } },
      errorMessage: null,
      orgId: a.orgId,
      seq: row.seq,
      actorType: 'user',
      actorHostname: null,
    });
  });

  it("records the read as data.access of the entry, by the reader, in the entry's organization", async () => {
    const reader = await orgUser(a.partnerId, a.orgId, 'org_viewer', { email: 'auditor@alpha.test', name: 'Auditor' });
    expect(
      (await t.api.request('GET', `${ENTRY}/${row.id}`, { token: reader, headers: { 'user-agent': 'viewer/1' } }))
        .status,
    ).toBe(200);
    const reads = await accessRows(row.id);
    expect(reads).toContainEqual({
      orgId: a.orgId,
      actorType: 'user',
      actorEmail: 'auditor@alpha.test',
      resourceType: 'audit_log',
      resourceId: row.id,
      details: { actor: { name: 'Auditor', role: 'org_viewer' } },
    });
  });

  it("is 404 for an absent entry and for another tenant's, and records no read", async () => {
    for (const [id, token] of [
      [randomUUID(), a.orgToken],
      [row.id, b.orgToken],
      [row.id, b.partnerToken],
    ] as const) {
      const reply = await t.api.request('GET', `${ENTRY}/${id}`, { token });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('NOT_FOUND');
    }
    expect(await accessRows(randomUUID())).toEqual([]);
    const byB = await t.db.admin.query(
      `SELECT 1 FROM audit_logs WHERE action = 'data.access' AND actor_email = 'partner_admin@partner.test' AND org_id = :orgId::uuid`,
      { orgId: b.orgId },
    );
    expect(byB.rows).toEqual([]);
  });

  it('is readable to the partner and the platform after the organization was deleted', async () => {
    expect((await t.api.request('GET', `${ENTRY}/${goneRow.id}`, { token: a.partnerToken })).body.id).toBe(goneRow.id);
    expect((await t.api.request('GET', `${ENTRY}/${goneRow.id}`, { token: await platformAdmin() })).status).toBe(200);
  });

  it('answers 400 for an id that is no UUID and 403 without audit:read', async () => {
    expect((await t.api.request('GET', `${ENTRY}/42`, { token: a.orgToken })).status).toBe(400);
    const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    expect((await t.api.request('GET', `${ENTRY}/${row.id}`, { token })).status).toBe(403);
  });
});
