import { beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

const auditRows = (action: string, resourceId: string) =>
  t.db.admin
    .query<Record<string, unknown>>(
      `SELECT actor_type::text AS "actorType", actor_id::text AS "actorId", actor_email AS "actorEmail", resource_type AS "resourceType",
              resource_name AS "resourceName", details, ip_address AS "ipAddress", result::text AS result
         FROM audit_logs WHERE action = :action::text AND resource_id = :resourceId::uuid ORDER BY seq`,
      { action, resourceId },
    )
    .then((r) => r.rows);

describe('the hierarchy writes to the audit trail', () => {
  it('device.create when an agent enrolls, with the new agent as the actor', async () => {
    const { deviceId, agentId } = await enrollDevice(t.api, tenant, 'audit-pc-1');
    expect(await auditRows('device.create', deviceId)).toEqual([
      expect.objectContaining({
        actorType: 'agent',
        actorId: agentId,
        resourceType: 'device',
        resourceName: 'audit-pc-1',
        ipAddress: '127.0.0.1',
        result: 'success',
        details: expect.objectContaining({ siteId: tenant.siteId, actor: { name: 'audit-pc-1', role: null } }),
      }),
    ]);
  });

  it('device.update with the changed fields before and after, by the user who changed them', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'audit-pc-2');
    const token = await orgUser(tenant.partnerId, tenant.orgId, 'org_admin', {
      email: 'grace@example.com',
      name: 'Grace',
    });
    await t.api.request('PATCH', `/api/v1/devices/${deviceId}`, { token, body: { displayName: 'Front desk' } });
    expect(await auditRows('device.update', deviceId)).toEqual([
      expect.objectContaining({
        actorType: 'user',
        actorEmail: 'grace@example.com',
        resourceName: 'Front desk',
        details: {
          before: { displayName: null },
          after: { displayName: 'Front desk' },
          actor: { name: 'Grace', role: 'org_admin' },
        },
      }),
    ]);
  });

  it('device.delete when a device is deleted', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'audit-pc-3');
    await t.api.request('DELETE', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken });
    expect(await auditRows('device.delete', deviceId)).toEqual([
      expect.objectContaining({ resourceName: 'audit-pc-3' }),
    ]);
  });

  it('organization.update when an organization is renamed and when it is deleted', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Before Ltd' },
    });
    await t.api.request('PATCH', `/api/v1/orgs/organizations/${org.body.id}`, {
      token: tenant.partnerToken,
      body: { name: 'After Ltd' },
    });
    await t.api.request('DELETE', `/api/v1/orgs/organizations/${org.body.id}`, { token: tenant.partnerToken });
    const rows = await auditRows('organization.update', org.body.id);
    expect(rows.map((r) => (r.details as { before: unknown; after: unknown }).after)).toEqual([
      { name: 'After Ltd' },
      { deleted: true },
    ]);
  });

  it('nothing when the change is refused', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'audit-pc-4');
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect(
      (await t.api.request('PATCH', `/api/v1/devices/${deviceId}`, { token: viewer, body: { displayName: 'x' } }))
        .status,
    ).toBe(403);
    expect(await auditRows('device.update', deviceId)).toEqual([]);
  });

  it('rows that form one verifiable chain per organization', async () => {
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });
});
