import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';

const t = useApi();
let a: Tenant;
let b: Tenant;
let a2: string;
let deviceB: string;

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  const second = await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Second' } });
  if (second.status !== 201) throw new Error(`second organization: ${second.status}`);
  a2 = second.body.id;
  deviceB = (await enrollDevice(t.api, b, 'beta-host')).deviceId;
});

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({ error: { code, message: expect.any(String) } });
}

const ids = (reply: Reply) => (reply.body.data as { id: string }[]).map((row) => row.id).sort();

async function organizationCount(): Promise<number> {
  const { rows } = await t.db.admin.query<{ n: number }>('SELECT count(*) AS n FROM organizations');
  return rows[0]!.n;
}

describe('partner tenancy', () => {
  it("a partner admin lists exactly its own partner's organizations", async () => {
    const reply = await t.api.request('GET', ORGS, { token: a.partnerToken });
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual([a.orgId, a2].sort());
    expect(reply.body.pagination.total).toBe(2);
  });

  it("a partner admin filtering the list by another partner's id gets an empty page", async () => {
    const reply = await t.api.request('GET', `${ORGS}?partnerId=${b.partnerId}`, { token: a.partnerToken });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual([]);
  });

  it.each([
    ['GET', () => `${ORGS}/${b.orgId}`, undefined],
    ['PATCH', () => `${ORGS}/${b.orgId}`, { name: 'Hijacked' }],
    ['DELETE', () => `${ORGS}/${b.orgId}`, undefined],
    ['GET', () => `${ORGS}/${b.orgId}/sites`, undefined],
    ['GET', () => `${ORGS}/${b.orgId}/sites/${b.siteId}`, undefined],
    ['PATCH', () => `${ORGS}/${b.orgId}/sites/${b.siteId}`, { name: 'Hijacked' }],
    ['POST', () => `${ORGS}/${b.orgId}/sites`, { name: 'Intruder site' }],
    ['POST', () => `${ORGS}/${b.orgId}/enrollment-keys`, {}],
    ['GET', () => `${ORGS}/${b.orgId}/enrollment-keys`, undefined],
  ])("a partner admin gets 404 for another partner's organization: %s %s", async (method, path, body) => {
    expectError(await t.api.request(method, path(), { token: a.partnerToken, body }), 404, 'NOT_FOUND');
  });

  it("another partner's writes to an organization leave it, its sites and its keys untouched", async () => {
    const token = a.partnerToken;
    await t.api.request('PATCH', `${ORGS}/${b.orgId}`, { token, body: { name: 'Hijacked' } });
    await t.api.request('DELETE', `${ORGS}/${b.orgId}`, { token });
    await t.api.request('POST', `${ORGS}/${b.orgId}/sites`, { token, body: { name: 'Intruder site' } });
    await t.api.request('PATCH', `${ORGS}/${b.orgId}/sites/${b.siteId}`, { token, body: { name: 'Hijacked' } });
    await t.api.request('POST', `${ORGS}/${b.orgId}/enrollment-keys`, { token, body: { name: 'Intruder key' } });
    const org = await t.db.admin.query('SELECT name, deleted_at FROM organizations WHERE id = :id::uuid', {
      id: b.orgId,
    });
    expect(org.rows).toEqual([{ name: 'Beta Corp', deleted_at: null }]);
    const sites = await t.db.admin.query('SELECT name FROM sites WHERE org_id = :id::uuid', { id: b.orgId });
    expect(sites.rows).toEqual([{ name: 'Main' }]);
    const keys = await t.db.admin.query('SELECT 1 FROM enrollment_keys WHERE name = :name::text', {
      name: 'Intruder key',
    });
    expect(keys.rows).toEqual([]);
  });

  it("a partner admin gets 404 for another organization's site through its own organization", async () => {
    expectError(
      await t.api.request('GET', `${ORGS}/${a.orgId}/sites/${b.siteId}`, { token: a.partnerToken }),
      404,
      'NOT_FOUND',
    );
  });

  it("listing devices with another partner's orgId returns an empty page, never its devices", async () => {
    const reply = await t.api.request('GET', `/api/v1/devices?orgId=${b.orgId}`, { token: a.partnerToken });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual([]);
    expect(reply.body.pagination.total).toBe(0);
  });

  it("a partner admin's unfiltered device list holds none of another partner's devices", async () => {
    const reply = await t.api.request('GET', '/api/v1/devices', { token: a.partnerToken });
    expect(reply.status).toBe(200);
    expect(ids(reply)).not.toContain(deviceB);
  });

  it.each([
    ['GET', undefined],
    ['PATCH', { displayName: 'Hijacked' }],
    ['DELETE', undefined],
  ])("another partner's device is 404 on %s", async (method, body) => {
    expectError(
      await t.api.request(method, `/api/v1/devices/${deviceB}`, { token: a.partnerToken, body }),
      404,
      'NOT_FOUND',
    );
  });

  it("another partner's device survives a PATCH and a DELETE by an outsider and stays in its owner's list", async () => {
    await t.api.request('PATCH', `/api/v1/devices/${deviceB}`, {
      token: a.partnerToken,
      body: { displayName: 'Hijacked' },
    });
    await t.api.request('DELETE', `/api/v1/devices/${deviceB}`, { token: a.partnerToken });
    const reply = await t.api.request('GET', '/api/v1/devices', { token: b.partnerToken });
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual([deviceB]);
    const { rows } = await t.db.admin.query('SELECT display_name, deleted_at FROM devices WHERE id = :id::uuid', {
      id: deviceB,
    });
    expect(rows).toEqual([{ display_name: null, deleted_at: null }]);
    const agent = await t.db.admin.query('SELECT revoked_at FROM agents WHERE device_id = :id::uuid', { id: deviceB });
    expect(agent.rows).toEqual([{ revoked_at: null }]);
  });
});

describe('organization tenancy', () => {
  it('an organization user lists only its own organization', async () => {
    const reply = await t.api.request('GET', ORGS, { token: a.orgToken });
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual([a.orgId]);
  });

  it('an organization user gets 404 for a sibling organization of the same partner', async () => {
    expectError(await t.api.request('GET', `${ORGS}/${a2}`, { token: a.orgToken }), 404, 'NOT_FOUND');
  });

  it("an organization user gets 404 for another partner's organization", async () => {
    expectError(await t.api.request('GET', `${ORGS}/${b.orgId}`, { token: a.orgToken }), 404, 'NOT_FOUND');
  });

  it('an organization admin cannot create organizations (403) and nothing is stored', async () => {
    const before = await organizationCount();
    expectError(
      await t.api.request('POST', ORGS, { token: a.orgToken, body: { name: 'Shadow Org' } }),
      403,
      'FORBIDDEN',
    );
    expect(await organizationCount()).toBe(before);
  });

  it('an organization admin cannot delete its own organization (403) and it stays live', async () => {
    expectError(await t.api.request('DELETE', `${ORGS}/${a.orgId}`, { token: a.orgToken }), 403, 'FORBIDDEN');
    const { rows } = await t.db.admin.query('SELECT deleted_at FROM organizations WHERE id = :id::uuid', {
      id: a.orgId,
    });
    expect(rows).toEqual([{ deleted_at: null }]);
  });

  it('an org_viewer cannot create sites (403)', async () => {
    const viewer = await orgUser(a.partnerId, a.orgId, 'org_viewer');
    expectError(
      await t.api.request('POST', `${ORGS}/${a.orgId}/sites`, { token: viewer, body: { name: 'Viewer site' } }),
      403,
      'FORBIDDEN',
    );
    const { rows } = await t.db.admin.query('SELECT 1 FROM sites WHERE name = :name::text', { name: 'Viewer site' });
    expect(rows).toEqual([]);
  });

  it('an org_viewer can list the sites of its organization (200)', async () => {
    const viewer = await orgUser(a.partnerId, a.orgId, 'org_viewer');
    const reply = await t.api.request('GET', `${ORGS}/${a.orgId}/sites`, { token: viewer });
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual([a.siteId]);
  });
});

describe('platform administrators', () => {
  it("a platform admin sees every partner's organizations", async () => {
    const reply = await t.api.request('GET', ORGS, { token: await platformAdmin() });
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual(expect.arrayContaining([a.orgId, a2, b.orgId]));
  });

  it('a platform admin creating an organization without partnerId gets 400 naming partnerId', async () => {
    const before = await organizationCount();
    const reply = await t.api.request('POST', ORGS, { token: await platformAdmin(), body: { name: 'Orphan' } });
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.partnerId' })]);
    expect(await organizationCount()).toBe(before);
  });

  it('a platform admin creating an organization for a partner that does not exist gets 404', async () => {
    const before = await organizationCount();
    const reply = await t.api.request('POST', ORGS, {
      token: await platformAdmin(),
      body: { name: 'Orphan', partnerId: randomUUID() },
    });
    expectError(reply, 404, 'NOT_FOUND');
    expect(await organizationCount()).toBe(before);
  });

  it("a partner admin naming another partner's partnerId gets 404 and nothing is created", async () => {
    const before = await organizationCount();
    const reply = await t.api.request('POST', ORGS, {
      token: a.partnerToken,
      body: { name: 'Smuggled', partnerId: b.partnerId },
    });
    expectError(reply, 404, 'NOT_FOUND');
    expect(await organizationCount()).toBe(before);
    const { rows } = await t.db.admin.query('SELECT 1 FROM organizations WHERE name = :name::text', {
      name: 'Smuggled',
    });
    expect(rows).toEqual([]);
  });
});
