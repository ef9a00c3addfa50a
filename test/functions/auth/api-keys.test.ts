import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const t = useApi();
let a: Tenant;
let b: Tenant;
let deviceA: string;
let deviceB: string;

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  deviceA = (await enrollDevice(t.api, a, 'alpha-host')).deviceId;
  deviceB = (await enrollDevice(t.api, b, 'beta-host')).deviceId;
});

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({ error: { code, message: expect.any(String) } });
}

/** Creates an API key of the tenant's organization through the API; returns the whole reply body. */
async function createKey(tenant: Tenant, role: string, name = `${role} key`, token = tenant.orgToken) {
  const reply = await t.api.request('POST', `${ORGS}/${tenant.orgId}/api-keys`, { token, body: { name, role } });
  if (reply.status !== 201) throw new Error(`api key: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as { id: string; key: string; keyPrefix: string; role: string; orgId: string };
}

const withKeyHeader = (key: string) => ({ headers: { 'x-api-key': key } });

describe('organization API keys', () => {
  it('an org admin creates an API key and sees the key, prefixed lbk_, once', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
      token: a.orgToken,
      body: { name: 'CI', role: 'org_technician' },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ orgId: a.orgId, name: 'CI', role: 'org_technician', revokedAt: null });
    expect(reply.body.key).toMatch(/^lbk_[A-Za-z0-9_-]{43}$/);
    expect(reply.body.keyPrefix).toBe(reply.body.key.slice(0, 12));
  });

  it('a key created without a role gets the org_viewer role', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
      token: a.orgToken,
      body: { name: 'Default role' },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.role).toBe('org_viewer');
  });

  it('a key cannot carry a role above the organization (400)', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
      token: a.orgToken,
      body: { name: 'Root key', role: 'platform_admin' },
    });
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.role' })]);
  });

  it('the database stores only the SHA-256 hash of the key, never the key', async () => {
    const created = await createKey(a, 'org_viewer', 'Hashed');
    const { rows } = await t.db.admin.query('SELECT * FROM api_keys WHERE id = :id::uuid', { id: created.id });
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.secret_hash).toBe(sha256(created.key));
    expect(JSON.stringify(row)).not.toContain(created.key);
    expect(JSON.stringify(row)).not.toContain(created.key.slice(12));
  });

  it('a key authenticates as a bearer token', async () => {
    const { key } = await createKey(a, 'org_viewer');
    const reply = await t.api.request('GET', '/api/v1/devices', { token: key });
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((d: { id: string }) => d.id)).toEqual([deviceA]);
  });

  it('a key authenticates in the X-API-Key header', async () => {
    const { key } = await createKey(a, 'org_viewer');
    const reply = await t.api.request('GET', '/api/v1/devices', withKeyHeader(key));
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((d: { id: string }) => d.id)).toEqual([deviceA]);
  });

  it("a key is scoped to its organization: another organization's device is 404", async () => {
    const { key } = await createKey(a, 'org_admin');
    expectError(await t.api.request('GET', `/api/v1/devices/${deviceB}`, { token: key }), 404, 'NOT_FOUND');
    expectError(await t.api.request('GET', `${ORGS}/${b.orgId}`, { token: key }), 404, 'NOT_FOUND');
  });

  it("a key asking for another organization's devices gets an empty page", async () => {
    const { key } = await createKey(a, 'org_admin');
    const reply = await t.api.request('GET', `/api/v1/devices?orgId=${b.orgId}`, withKeyHeader(key));
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual([]);
  });

  it('an org_viewer key cannot change a device (403)', async () => {
    const { key } = await createKey(a, 'org_viewer');
    const displayName = () =>
      t.db.admin
        .query('SELECT display_name FROM devices WHERE id = :id::uuid', { id: deviceA })
        .then((r) => r.rows[0]!.display_name);
    const before = await displayName();
    expectError(
      await t.api.request('PATCH', `/api/v1/devices/${deviceA}`, {
        token: key,
        body: { displayName: 'Renamed by viewer' },
      }),
      403,
      'FORBIDDEN',
    );
    expect(await displayName()).toBe(before);
  });

  it('an org_technician key can change a device of its organization', async () => {
    const { key } = await createKey(a, 'org_technician');
    const reply = await t.api.request('PATCH', `/api/v1/devices/${deviceA}`, {
      token: key,
      body: { displayName: 'Front desk' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: deviceA, displayName: 'Front desk' });
  });

  it('a key cannot call a user-only route, as bearer or in X-API-Key (401)', async () => {
    const { key } = await createKey(a, 'org_admin');
    const body = { name: 'Minted by a key', role: 'org_admin' };
    const asBearer = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, { token: key, body });
    expectError(asBearer, 401, 'UNAUTHENTICATED');
    expect(asBearer.headers.get('www-authenticate')).toBe('Bearer');
    expectError(
      await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, { ...withKeyHeader(key), body }),
      401,
      'UNAUTHENTICATED',
    );
    const { rows } = await t.db.admin.query('SELECT 1 FROM api_keys WHERE name = :name::text', { name: body.name });
    expect(rows).toEqual([]);
  });

  it('an org_viewer user cannot create API keys (403)', async () => {
    const viewer = await orgUser(a.partnerId, a.orgId, 'org_viewer');
    expectError(
      await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, { token: viewer, body: { name: 'Viewer key' } }),
      403,
      'FORBIDDEN',
    );
  });

  it("another partner's admin cannot create a key for the organization (404)", async () => {
    expectError(
      await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
        token: b.partnerToken,
        body: { name: 'Foreign key' },
      }),
      404,
      'NOT_FOUND',
    );
  });

  it('listing keys shows their prefix and never the key', async () => {
    const created = await createKey(a, 'org_viewer', 'Listed');
    const reply = await t.api.request('GET', `${ORGS}/${a.orgId}/api-keys`, { token: a.orgToken });
    expect(reply.status).toBe(200);
    const listed = reply.body.data.find((k: { id: string }) => k.id === created.id);
    expect(listed).toMatchObject({ id: created.id, name: 'Listed', keyPrefix: created.keyPrefix });
    for (const item of reply.body.data) expect(item).not.toHaveProperty('key');
    expect(JSON.stringify(reply.body)).not.toContain(created.key);
  });

  it('a revoked key no longer authenticates (204, then 401)', async () => {
    const { id, key } = await createKey(a, 'org_admin');
    expect((await t.api.request('GET', '/api/v1/devices', { token: key })).status).toBe(200);
    const revoked = await t.api.request('DELETE', `${ORGS}/${a.orgId}/api-keys/${id}`, { token: a.orgToken });
    expect(revoked.status).toBe(204);
    expectError(await t.api.request('GET', '/api/v1/devices', { token: key }), 401, 'UNAUTHENTICATED');
    expectError(await t.api.request('GET', '/api/v1/devices', withKeyHeader(key)), 401, 'UNAUTHENTICATED');
  });

  it("revoking another organization's key is 404 and leaves it working", async () => {
    const { id, key } = await createKey(b, 'org_viewer');
    expectError(
      await t.api.request('DELETE', `${ORGS}/${a.orgId}/api-keys/${id}`, { token: a.orgToken }),
      404,
      'NOT_FOUND',
    );
    expect((await t.api.request('GET', '/api/v1/devices', { token: key })).status).toBe(200);
  });

  it('a key of a deleted organization no longer authenticates (401)', async () => {
    const org = await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Short-lived' } });
    expect(org.status).toBe(201);
    const orgAdmin = await orgUser(a.partnerId, org.body.id, 'org_admin');
    const { key } = await createKey({ ...a, orgId: org.body.id }, 'org_admin', 'Doomed', orgAdmin);
    expect((await t.api.request('GET', '/api/v1/devices', { token: key })).status).toBe(200);
    expect((await t.api.request('DELETE', `${ORGS}/${org.body.id}`, { token: a.partnerToken })).status).toBe(204);
    expectError(await t.api.request('GET', '/api/v1/devices', { token: key }), 401, 'UNAUTHENTICATED');
  });

  it('a made-up lbk_ key is refused (401), as bearer and in X-API-Key', async () => {
    const fake = `lbk_${'A'.repeat(43)}`;
    expectError(await t.api.request('GET', '/api/v1/devices', { token: fake }), 401, 'UNAUTHENTICATED');
    expectError(await t.api.request('GET', '/api/v1/devices', withKeyHeader(fake)), 401, 'UNAUTHENTICATED');
  });
});
