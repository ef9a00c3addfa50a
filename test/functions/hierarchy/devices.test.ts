import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
});

describe('enrollment', () => {
  it('accepts a key request without a body and an agent that reports fields this server does not know', async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
    });
    expect(key.status).toBe(201);
    expect(key.body).toMatchObject({ id: expect.any(String), key: expect.stringMatching(/^lbe_/), siteId: null });
    const enrolled = await t.api.request('POST', '/api/v1/agents/enroll', {
      body: { enrollmentKey: key.body.key, hostname: 'future-agent', architecture: 'arm64' },
    });
    expect(enrolled.status).toBe(201);
  });
});

describe('devices', () => {
  it('appear after enrollment with what the agent reported', async () => {
    const { deviceId, agentId } = await enrollDevice(t.api, tenant, 'web-01');
    const reply = await t.api.request('GET', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: deviceId,
      agentId,
      orgId: tenant.orgId,
      siteId: tenant.siteId,
      hostname: 'web-01',
      displayName: null,
    });
  });

  it('are listed per organization and site and found by hostname', async () => {
    await enrollDevice(t.api, tenant, 'db-01');
    await enrollDevice(t.api, tenant, 'db-02');
    const reply = await t.api.request('GET', `/api/v1/devices?orgId=${tenant.orgId}&search=db-`, {
      token: tenant.partnerToken,
    });
    expect(reply.body.data.map((d: { hostname: string }) => d.hostname)).toEqual(['db-01', 'db-02']);
    const bySite = await t.api.request('GET', `/api/v1/devices?siteId=${tenant.siteId}&limit=1`, {
      token: tenant.orgToken,
    });
    expect(bySite.body.data).toHaveLength(1);
    expect(bySite.body.pagination.total).toBeGreaterThanOrEqual(3);
  });

  it('can be renamed and moved to another site of their organization', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'laptop-7');
    const site = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Annex' },
    });
    const reply = await t.api.request('PATCH', `/api/v1/devices/${deviceId}`, {
      token: tenant.orgToken,
      body: { displayName: 'CFO laptop', siteId: site.body.id },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ displayName: 'CFO laptop', siteId: site.body.id });
  });

  it('cannot be moved to a site of another organization', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'kiosk');
    const reply = await t.api.request('PATCH', `/api/v1/devices/${deviceId}`, {
      token: tenant.orgToken,
      body: { siteId: other.siteId },
    });
    expect(reply.status).toBe(400);
    const { rows } = await t.db.admin.query('SELECT site_id AS "siteId" FROM devices WHERE id = :id::uuid', {
      id: deviceId,
    });
    expect(rows).toEqual([{ siteId: tenant.siteId }]);
  });

  it('are deleted softly and their agent token stops working', async () => {
    const { deviceId, token } = await enrollDevice(t.api, tenant, 'old-pc');
    expect((await t.api.request('DELETE', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken })).status).toBe(204);
    expect((await t.api.request('GET', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken })).status).toBe(404);
    const { rows } = await t.db.admin.query<{ deleted: boolean; revoked: boolean }>(
      `SELECT d.deleted_at IS NOT NULL AS deleted, a.revoked_at IS NOT NULL AS revoked FROM devices d JOIN agents a ON a.device_id = d.id WHERE d.id = :id::uuid`,
      { id: deviceId },
    );
    expect(rows).toEqual([{ deleted: true, revoked: true }]);
    const { selectAgentByToken } = await import('#shared/auth/store.ts');
    const { hashSecret } = await import('#shared/auth/secrets.ts');
    expect(await selectAgentByToken(t.db.admin, hashSecret(token))).toBeUndefined();
  });
});
