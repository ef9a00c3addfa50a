import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;

const contactsPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/contacts`;

async function auditRows(action: string, resourceId: string) {
  const { rows } = await t.db.admin.query<{ details: Record<string, unknown> }>(
    'SELECT details FROM audit_logs WHERE action = :action::text AND resource_id = :resourceId::uuid ORDER BY seq',
    { action, resourceId },
  );
  return rows;
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
});

describe('contacts', () => {
  it('are created, read, listed, changed and deleted, each write audited with before and after', async () => {
    const created = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        name: 'Ada Lovelace',
        email: ' ada@acme.test ',
        phone: '+44 20 7946 0000',
        title: 'CTO',
        roles: ['Primary', ' technical'],
        siteId: tenant.siteId,
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      orgId: tenant.orgId,
      siteId: tenant.siteId,
      name: 'Ada Lovelace',
      email: 'ada@acme.test',
      roles: ['primary', 'technical'],
      notes: null,
      externalId: null,
    });
    const id = created.body.id;
    expect((await t.api.request('GET', `/api/v1/contacts/${id}`, { token: tenant.orgToken })).body).toEqual(
      created.body,
    );
    const list = await t.api.request('GET', `${contactsPath(tenant.orgId)}?search=ada@`, { token: tenant.orgToken });
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([id]);
    const changed = await t.api.request('PATCH', `/api/v1/contacts/${id}`, {
      token: tenant.orgToken,
      body: { title: 'CEO', siteId: null },
    });
    expect(changed.body).toMatchObject({ title: 'CEO', siteId: null, name: 'Ada Lovelace' });
    const [update] = await auditRows('contact.update', id);
    expect(update!.details).toMatchObject({
      before: { title: 'CTO', siteId: tenant.siteId },
      after: { title: 'CEO', siteId: null },
    });
    expect((await t.api.request('DELETE', `/api/v1/contacts/${id}`, { token: tenant.orgToken })).status).toBe(204);
    expect((await t.api.request('GET', `/api/v1/contacts/${id}`, { token: tenant.orgToken })).status).toBe(404);
    expect(await auditRows('contact.create', id)).toHaveLength(1);
    const [deleted] = await auditRows('contact.delete', id);
    expect(deleted!.details).toMatchObject({ before: { name: 'Ada Lovelace', title: 'CEO' } });
  });

  it('refuse bad fields with a 400 naming them, and store nothing', async () => {
    for (const [body, path] of [
      [{ name: 'X', email: 'not-an-email' }, 'body.email'],
      [{ name: 'X', roles: ['janitor'] }, 'body.roles.0'],
      [{ name: 'X', roles: ['Billing', 'billing'] }, 'body.roles'],
      [{ name: '' }, 'body.name'],
      [{ name: 'X', externalId: '7' }, 'body.externalId'],
      [{ name: 'X', shoeSize: 44 }, 'body.shoeSize'],
    ] as const) {
      const reply = await t.api.request('POST', contactsPath(tenant.orgId), { token: tenant.orgToken, body });
      expect(reply.status).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const { rows } = await t.db.admin.query(`SELECT 1 FROM contacts WHERE name = 'X'`);
    expect(rows).toEqual([]);
  });

  it("cannot point into another tenant's site, and one key belongs to one contact per organization", async () => {
    const foreignSite = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Mallory', siteId: other.siteId },
    });
    expect(foreignSite.status).toBe(400);
    expect(foreignSite.body.error.details[0].path).toBe('body.siteId');
    const key = { sourceSystem: 'ninjaone', externalId: 'c-1' };
    expect(
      (await t.api.request('POST', contactsPath(tenant.orgId), { token: tenant.orgToken, body: { name: 'A', ...key } }))
        .status,
    ).toBe(201);
    const twice = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'B', ...key },
    });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe('CONFLICT');
    const elsewhere = await t.api.request('POST', contactsPath(other.orgId), {
      token: other.orgToken,
      body: { name: 'A', ...key },
    });
    expect(elsewhere.status).toBe(201);
  });

  it('are never reachable or named across tenants, and viewers only read', async () => {
    const theirs = await t.api.request('POST', contactsPath(other.orgId), {
      token: other.orgToken,
      body: { name: 'Their secret contact' },
    });
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'Mine' }],
      ['DELETE', undefined],
    ] as const) {
      const reply = await t.api.request(method, `/api/v1/contacts/${theirs.body.id}`, { token: tenant.orgToken, body });
      expect(reply.status).toBe(404);
      expect(JSON.stringify(reply.body)).not.toContain('Their secret');
    }
    expect((await t.api.request('GET', contactsPath(other.orgId), { token: tenant.orgToken })).status).toBe(404);
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', contactsPath(tenant.orgId), { token: viewer })).status).toBe(200);
    expect(
      (await t.api.request('POST', contactsPath(tenant.orgId), { token: viewer, body: { name: 'Viewer' } })).status,
    ).toBe(403);
  });
});
