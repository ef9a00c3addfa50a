import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

describe('partners', () => {
  it('are created by a platform administrator and returned with their id', async () => {
    const reply = await t.api.request('POST', '/api/v1/partners', {
      token: await platformAdmin(),
      body: { name: 'Northwind IT' },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      name: 'Northwind IT',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const { rows } = await t.db.admin.query('SELECT name FROM partners WHERE id = :id::uuid', { id: reply.body.id });
    expect(rows).toEqual([{ name: 'Northwind IT' }]);
  });

  it('cannot be created or listed by a partner administrator', async () => {
    const token = await partnerUser(tenant.partnerId);
    expect((await t.api.request('POST', '/api/v1/partners', { token, body: { name: 'Mine' } })).status).toBe(403);
    expect((await t.api.request('GET', '/api/v1/partners', { token })).body.error.code).toBe('FORBIDDEN');
  });

  it('are listed in pages with the total', async () => {
    const reply = await t.api.request('GET', '/api/v1/partners?limit=1', { token: await platformAdmin() });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toHaveLength(1);
    expect(reply.body.pagination).toEqual({
      page: 1,
      limit: 1,
      total: expect.any(Number),
      totalPages: reply.body.pagination.total,
    });
  });
});

describe('creating an organization', () => {
  it('also creates its first site, named Main unless given', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Contoso', externalId: 'crm-42' },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      name: 'Contoso',
      partnerId: tenant.partnerId,
      externalId: 'crm-42',
      site: { name: 'Main', orgId: reply.body.id },
    });
    const { rows } = await t.db.admin.query('SELECT name FROM sites WHERE org_id = :id::uuid', { id: reply.body.id });
    expect(rows).toEqual([{ name: 'Main' }]);
  });

  it('takes the first site from the body', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Fabrikam', site: { name: 'Head Office', timezone: 'Europe/Berlin' } },
    });
    expect(reply.body.site).toMatchObject({ name: 'Head Office', timezone: 'Europe/Berlin' });
  });

  it('refuses a first site whose time zone is no IANA name (400 naming body.site.timezone) and stores nothing', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Timeless', site: { name: 'Head Office', timezone: 'Mars/Olympus_Mons' } },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [expect.objectContaining({ path: 'body.site.timezone' })],
    });
    const { rows } = await t.db.admin.query(`SELECT 1 FROM organizations WHERE name = 'Timeless'`);
    expect(rows).toEqual([]);
  });

  it('by a platform administrator names the partner', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: await platformAdmin(),
      body: { name: 'Tailspin', partnerId: tenant.partnerId },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.partnerId).toBe(tenant.partnerId);
  });

  it('rejects a bad body with 400 and stores nothing', async () => {
    const before = await t.db.admin.query('SELECT count(*) AS n FROM organizations');
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(256) }, { name: 'Ok', color: 'red' }, { name: 42 }]) {
      const reply = await t.api.request('POST', '/api/v1/orgs/organizations', { token: tenant.partnerToken, body });
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.error.code).toBe('VALIDATION_FAILED');
      expect(reply.body.error.details[0].path).toMatch(/^body/);
    }
    const malformed = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    const empty = await t.api.request('POST', '/api/v1/orgs/organizations', { token: tenant.partnerToken });
    expect(empty.body.error.details[0].path).toBe('body.name');
    expect(await t.db.admin.query('SELECT count(*) AS n FROM organizations')).toEqual(before);
  });
});

describe('organizations', () => {
  it('are found by name, with LIKE wildcards matched literally', async () => {
    await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: '100% Uptime Ltd' },
    });
    await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: '1000 Uptime Ltd' },
    });
    const reply = await t.api.request('GET', `/api/v1/orgs/organizations?search=${encodeURIComponent('100%')}`, {
      token: tenant.partnerToken,
    });
    expect(reply.body.data.map((o: { name: string }) => o.name)).toEqual(['100% Uptime Ltd']);
  });

  it('clamp a page size above the maximum to 100 and refuse a page size of 0', async () => {
    const clamped = await t.api.request('GET', '/api/v1/orgs/organizations?limit=5000', { token: tenant.partnerToken });
    expect(clamped.body.pagination.limit).toBe(100);
    const zero = await t.api.request('GET', '/api/v1/orgs/organizations?limit=0', { token: tenant.partnerToken });
    expect(zero.status).toBe(400);
    expect(zero.body.error.details[0].path).toBe('query.limit');
  });

  it('can be renamed, and an external id cleared', async () => {
    const reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
      token: tenant.orgToken,
      body: { name: 'Acme Renamed', externalId: null },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: tenant.orgId, name: 'Acme Renamed', externalId: null });
    expect(
      (await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken, body: {} }))
        .status,
    ).toBe(400);
  });

  it('answer 400 for an id that is not a UUID and 404 for one that does not exist', async () => {
    expect((await t.api.request('GET', '/api/v1/orgs/organizations/nope', { token: tenant.partnerToken })).status).toBe(
      400,
    );
    const missing = await t.api.request('GET', '/api/v1/orgs/organizations/7d3c1a52-3b0e-4e8e-9a43-0c1f5f0c9b11', {
      token: tenant.partnerToken,
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('are deleted softly: gone from the API, kept in the database', async () => {
    const created = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Short Lived' },
    });
    const id = created.body.id;
    expect(
      (await t.api.request('DELETE', `/api/v1/orgs/organizations/${id}`, { token: tenant.partnerToken })).status,
    ).toBe(204);
    expect(
      (await t.api.request('GET', `/api/v1/orgs/organizations/${id}`, { token: tenant.partnerToken })).status,
    ).toBe(404);
    const list = await t.api.request('GET', '/api/v1/orgs/organizations?limit=100', { token: tenant.partnerToken });
    expect(list.body.data.map((o: { id: string }) => o.id)).not.toContain(id);
    const { rows } = await t.db.admin.query<{ deleted: boolean }>(
      'SELECT deleted_at IS NOT NULL AS deleted FROM organizations WHERE id = :id::uuid',
      { id },
    );
    expect(rows).toEqual([{ deleted: true }]);
    expect(
      (await t.api.request('DELETE', `/api/v1/orgs/organizations/${id}`, { token: tenant.partnerToken })).status,
    ).toBe(404);
  });

  it('cannot be deleted by their own organization users', async () => {
    const reply = await t.api.request('DELETE', `/api/v1/orgs/organizations/${tenant.orgId}`, {
      token: await orgUser(tenant.partnerId, tenant.orgId, 'org_admin'),
    });
    expect(reply.status).toBe(403);
  });
});
