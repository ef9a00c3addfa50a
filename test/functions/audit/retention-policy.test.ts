import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedDemo } from '#demo/demo.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const t = useApi();
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
});

const retention = (orgId: string) => `${ORGS}/${orgId}/audit-retention`;
const getPolicy = (orgId: string, token: string) => t.api.request('GET', retention(orgId), { token });
const putPolicy = (orgId: string, token: string, body: unknown) =>
  t.api.request('PUT', retention(orgId), { token, body });

/** An organization as releases before v0.110.0 created them: no retention policy row. */
async function legacyOrganization(partnerId: string): Promise<string> {
  const { rows } = await t.db.admin.query<{ id: string }>(
    `INSERT INTO organizations (partner_id, name) VALUES (:partnerId::uuid, 'Legacy Ltd') RETURNING id::text AS id`,
    {
      partnerId,
    },
  );
  return rows[0]!.id;
}

const storedPolicy = (orgId: string) =>
  t.db.admin
    .query(
      'SELECT retention_days AS "retentionDays", archive_to_s3 AS "archiveToS3" FROM audit_retention_policies WHERE org_id = :orgId::uuid',
      { orgId },
    )
    .then((r) => r.rows);

describe('GET /orgs/organizations/{id}/audit-retention', () => {
  it('shows the defaults with configured false for an organization without a policy', async () => {
    const orgId = await legacyOrganization(a.partnerId);
    const reply = await getPolicy(orgId, a.partnerToken);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      orgId,
      retentionDays: 365,
      archiveToS3: false,
      lastCleanupAt: null,
      configured: false,
    });
  });

  it('shows the 365-day policy an organization created through the API got with it', async () => {
    const reply = await getPolicy(a.orgId, a.orgToken);
    expect(reply.body).toEqual({
      orgId: a.orgId,
      retentionDays: 365,
      archiveToS3: false,
      lastCleanupAt: null,
      configured: true,
    });
  });

  it('needs audit:read (403), and is readable by an org_viewer', async () => {
    expect((await getPolicy(a.orgId, await orgUser(a.partnerId, a.orgId, 'org_viewer'))).status).toBe(200);
    const noAudit = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    expect((await getPolicy(a.orgId, noAudit)).status).toBe(403);
  });

  it("answers 404 for another tenant's organization and for one that does not exist", async () => {
    for (const [orgId, token] of [
      [a.orgId, b.orgToken],
      [a.orgId, b.partnerToken],
      [randomUUID(), await platformAdmin()],
    ] as const) {
      const reply = await getPolicy(orgId, token);
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('NOT_FOUND');
    }
  });
});

describe('PUT /orgs/organizations/{id}/audit-retention', () => {
  it('configures an organization that had no policy and answers the saved policy', async () => {
    const orgId = await legacyOrganization(a.partnerId);
    const reply = await putPolicy(orgId, a.partnerToken, { retentionDays: 90 });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ orgId, retentionDays: 90, archiveToS3: false, lastCleanupAt: null, configured: true });
    expect((await getPolicy(orgId, a.partnerToken)).body).toEqual(reply.body);
  });

  it('changes an existing policy, for the organization administrator too (org_admin holds audit:manage)', async () => {
    const tenant = await createTenant(t.api, 'Gamma');
    expect((await putPolicy(tenant.orgId, tenant.orgToken, { retentionDays: 30 })).body).toMatchObject({
      retentionDays: 30,
      configured: true,
    });
    expect((await putPolicy(tenant.orgId, tenant.orgToken, { retentionDays: 3650 })).body).toMatchObject({
      retentionDays: 3650,
    });
    expect((await putPolicy(tenant.orgId, tenant.orgToken, { retentionDays: 1 })).body).toMatchObject({
      retentionDays: 1,
    });
    expect(await storedPolicy(tenant.orgId)).toEqual([{ retentionDays: 1, archiveToS3: false }]);
  });

  it.each([
    ['0', { retentionDays: 0 }],
    ['3651', { retentionDays: 3651 }],
    ['a fraction', { retentionDays: 1.5 }],
    ['a string', { retentionDays: '30' }],
    ['null', { retentionDays: null }],
    ['a missing retentionDays', {}],
    ['an unknown field', { retentionDays: 30, retentionMonths: 1 }],
    ['archiveToS3, which is reserved', { retentionDays: 30, archiveToS3: true }],
  ])('refuses %s with 400 and stores nothing', async (_, body) => {
    const orgId = await legacyOrganization(a.partnerId);
    const reply = await putPolicy(orgId, a.partnerToken, body);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('VALIDATION_FAILED');
    expect(await storedPolicy(orgId)).toEqual([]);
  });

  it('needs audit:manage: 403 for an org_viewer, an org_technician and a partner_technician, and nothing changes', async () => {
    for (const token of [
      await orgUser(a.partnerId, a.orgId, 'org_viewer'),
      await orgUser(a.partnerId, a.orgId, 'org_technician'),
      await partnerUser(a.partnerId, 'partner_technician'),
    ]) {
      const reply = await putPolicy(a.orgId, token, { retentionDays: 7 });
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('FORBIDDEN');
    }
    expect(await storedPolicy(a.orgId)).toEqual([{ retentionDays: 365, archiveToS3: false }]);
  });

  it("answers 404 for another tenant's organization, even with audit:manage, and changes nothing", async () => {
    expect((await putPolicy(a.orgId, b.orgToken, { retentionDays: 7 })).status).toBe(404);
    expect((await putPolicy(a.orgId, b.partnerToken, { retentionDays: 7 })).status).toBe(404);
    expect(await storedPolicy(a.orgId)).toEqual([{ retentionDays: 365, archiveToS3: false }]);
  });

  it('is audited as organization.update with retentionDays before and after, by the caller', async () => {
    const orgId = await legacyOrganization(a.partnerId);
    const token = await partnerUser(a.partnerId, 'partner_admin', { email: 'ada@msp.test', name: 'Ada' });
    await putPolicy(orgId, token, { retentionDays: 180 });
    await putPolicy(orgId, token, { retentionDays: 60 });
    const { rows } = await t.db.admin.query(
      `SELECT action, actor_type::text AS "actorType", actor_email AS "actorEmail", resource_type AS "resourceType", resource_id::text AS "resourceId",
              resource_name AS "resourceName", details
         FROM audit_logs WHERE org_id = :orgId::uuid ORDER BY seq`,
      { orgId },
    );
    const event = {
      action: 'organization.update',
      actorType: 'user',
      actorEmail: 'ada@msp.test',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: 'Legacy Ltd',
    };
    expect(rows).toEqual([
      {
        ...event,
        details: {
          before: { retentionDays: null },
          after: { retentionDays: 180 },
          actor: { name: 'Ada', role: 'partner_admin' },
        },
      },
      {
        ...event,
        details: {
          before: { retentionDays: 180 },
          after: { retentionDays: 60 },
          actor: { name: 'Ada', role: 'partner_admin' },
        },
      },
    ]);
  });
});

describe('every new organization gets a 365-day policy', () => {
  it('when created through the API, in the same transaction as the organization', async () => {
    const created = await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Fresh Ltd' } });
    expect(created.status).toBe(201);
    expect((await getPolicy(created.body.id, a.partnerToken)).body).toEqual({
      orgId: created.body.id,
      retentionDays: 365,
      archiveToS3: false,
      lastCleanupAt: null,
      configured: true,
    });
  });

  it('when the demo seed of npm start creates its organization', async () => {
    const demo = await seedDemo(t.db.admin);
    expect(await storedPolicy(demo.orgId)).toEqual([{ retentionDays: 365, archiveToS3: false }]);
  });
});
