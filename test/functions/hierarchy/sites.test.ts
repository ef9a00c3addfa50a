import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

const sites = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/sites`;

describe('sites', () => {
  it('are created in an organization and listed oldest first', async () => {
    const created = await t.api.request('POST', sites(tenant.orgId), { token: tenant.orgToken, body: { name: 'Warehouse', address: '1 Dock Road' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.any(String), orgId: tenant.orgId, name: 'Warehouse', address: '1 Dock Road', timezone: null });
    const list = await t.api.request('GET', sites(tenant.orgId), { token: tenant.orgToken });
    expect(list.body.data.map((s: { name: string }) => s.name)).toEqual(['Main', 'Warehouse']);
    expect(list.body.pagination.total).toBe(2);
  });

  it('can be changed one field at a time', async () => {
    const created = await t.api.request('POST', sites(tenant.orgId), { token: tenant.orgToken, body: { name: 'Lab', timezone: 'UTC' } });
    const changed = await t.api.request('PATCH', `${sites(tenant.orgId)}/${created.body.id}`, { token: tenant.orgToken, body: { timezone: null } });
    expect(changed.body).toMatchObject({ name: 'Lab', timezone: null });
    const fetched = await t.api.request('GET', `${sites(tenant.orgId)}/${created.body.id}`, { token: tenant.orgToken });
    expect(fetched.body).toEqual(changed.body);
  });

  it('refuse to delete the last site of an organization', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', { token: tenant.partnerToken, body: { name: 'One Site Co' } });
    const reply = await t.api.request('DELETE', `${sites(org.body.id)}/${org.body.site.id}`, { token: tenant.partnerToken });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('LAST_SITE');
    expect((await t.api.request('GET', sites(org.body.id), { token: tenant.partnerToken })).body.pagination.total).toBe(1);
  });

  it('refuse to delete a site that still holds devices', async () => {
    const site = await t.api.request('POST', sites(tenant.orgId), { token: tenant.orgToken, body: { name: 'Branch' } });
    await enrollDevice(t.api, tenant, 'branch-pc', site.body.id);
    const reply = await t.api.request('DELETE', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('SITE_NOT_EMPTY');
  });

  it('are deleted when empty, and their enrollment keys stop working', async () => {
    const site = await t.api.request('POST', sites(tenant.orgId), { token: tenant.orgToken, body: { name: 'Pop-up Store' } });
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, { token: tenant.orgToken, body: { siteId: site.body.id } });
    expect((await t.api.request('DELETE', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken })).status).toBe(204);
    expect((await t.api.request('GET', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken })).status).toBe(404);
    const enroll = await t.api.request('POST', '/api/v1/agents/enroll', { body: { enrollmentKey: key.body.key, hostname: 'late-pc' } });
    expect(enroll.status).toBe(401);
  });

  it('keep at least one site when the last two are deleted at the same time', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', { token: tenant.partnerToken, body: { name: 'Race Co' } });
    const second = await t.api.request('POST', sites(org.body.id), { token: tenant.partnerToken, body: { name: 'Second' } });
    const replies = await Promise.all(
      [org.body.site.id, second.body.id].map((id) => t.api.request('DELETE', `${sites(org.body.id)}/${id}`, { token: tenant.partnerToken })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([204, 409]);
    expect((await t.api.request('GET', sites(org.body.id), { token: tenant.partnerToken })).body.pagination.total).toBe(1);
  });
});
