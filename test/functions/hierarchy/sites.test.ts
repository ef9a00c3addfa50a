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
    const created = await t.api.request('POST', sites(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Warehouse', address: '1 Dock Road' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      orgId: tenant.orgId,
      name: 'Warehouse',
      address: '1 Dock Road',
      timezone: null,
    });
    const list = await t.api.request('GET', sites(tenant.orgId), { token: tenant.orgToken });
    expect(list.body.data.map((s: { name: string }) => s.name)).toEqual(['Main', 'Warehouse']);
    expect(list.body.pagination.total).toBe(2);
  });

  it('can be changed one field at a time', async () => {
    const created = await t.api.request('POST', sites(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Lab', timezone: 'UTC' },
    });
    const changed = await t.api.request('PATCH', `${sites(tenant.orgId)}/${created.body.id}`, {
      token: tenant.orgToken,
      body: { timezone: null },
    });
    expect(changed.body).toMatchObject({ name: 'Lab', timezone: null });
    const fetched = await t.api.request('GET', `${sites(tenant.orgId)}/${created.body.id}`, { token: tenant.orgToken });
    expect(fetched.body).toEqual(changed.body);
  });

  it('refuse to be created with a time zone that is no IANA name (400 naming body.timezone)', async () => {
    for (const timezone of ['Mars/Olympus_Mons', 'GMT+25', '+01:00']) {
      const reply = await t.api.request('POST', sites(tenant.orgId), {
        token: tenant.orgToken,
        body: { name: 'Nowhere', timezone },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [expect.objectContaining({ path: 'body.timezone' })],
      });
    }
    const { rows } = await t.db.admin.query(`SELECT 1 FROM sites WHERE name = 'Nowhere'`);
    expect(rows).toEqual([]);
  });

  it('refuse a change to a time zone that is no IANA name (400 naming body.timezone) and keep theirs', async () => {
    const created = await t.api.request('POST', sites(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Depot', timezone: 'America/New_York' },
    });
    expect(created.status).toBe(201);
    const changed = await t.api.request('PATCH', `${sites(tenant.orgId)}/${created.body.id}`, {
      token: tenant.orgToken,
      body: { timezone: 'Eastern Time' },
    });
    expect(changed.status).toBe(400);
    expect(changed.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [expect.objectContaining({ path: 'body.timezone' })],
    });
    const fetched = await t.api.request('GET', `${sites(tenant.orgId)}/${created.body.id}`, { token: tenant.orgToken });
    expect(fetched.body.timezone).toBe('America/New_York');
  });

  it('refuse to delete the last site of an organization', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'One Site Co' },
    });
    const reply = await t.api.request('DELETE', `${sites(org.body.id)}/${org.body.site.id}`, {
      token: tenant.partnerToken,
    });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('LAST_SITE');
    expect((await t.api.request('GET', sites(org.body.id), { token: tenant.partnerToken })).body.pagination.total).toBe(
      1,
    );
  });

  it('refuse to delete a site that still holds devices', async () => {
    const site = await t.api.request('POST', sites(tenant.orgId), { token: tenant.orgToken, body: { name: 'Branch' } });
    await enrollDevice(t.api, tenant, 'branch-pc', site.body.id);
    const reply = await t.api.request('DELETE', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('SITE_NOT_EMPTY');
  });

  it('are deleted when empty, and their enrollment keys stop working', async () => {
    const site = await t.api.request('POST', sites(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Pop-up Store' },
    });
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
      body: { siteId: site.body.id },
    });
    expect(
      (await t.api.request('DELETE', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken })).status,
    ).toBe(204);
    expect(
      (await t.api.request('GET', `${sites(tenant.orgId)}/${site.body.id}`, { token: tenant.orgToken })).status,
    ).toBe(404);
    const enroll = await t.api.request('POST', '/api/v1/agents/enroll', {
      body: { enrollmentKey: key.body.key, hostname: 'late-pc' },
    });
    expect(enroll.status).toBe(401);
  });

  it('keep at least one site when the last two are deleted at the same time', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Race Co' },
    });
    const second = await t.api.request('POST', sites(org.body.id), {
      token: tenant.partnerToken,
      body: { name: 'Second' },
    });
    const replies = await Promise.all(
      [org.body.site.id, second.body.id].map((id) =>
        t.api.request('DELETE', `${sites(org.body.id)}/${id}`, { token: tenant.partnerToken }),
      ),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([204, 409]);
    expect((await t.api.request('GET', sites(org.body.id), { token: tenant.partnerToken })).body.pagination.total).toBe(
      1,
    );
  });
});

describe('deleting a site while others write to it', () => {
  const rounds = 20;
  const orgs = '/api/v1/orgs/organizations';

  async function createSite(orgId: string, name: string): Promise<string> {
    const reply = await t.api.request('POST', sites(orgId), { token: tenant.partnerToken, body: { name } });
    if (reply.status !== 201) throw new Error(`site: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.id;
  }

  async function createKey(orgId: string, body: { siteId?: string }): Promise<string> {
    const reply = await t.api.request('POST', `${orgs}/${orgId}/enrollment-keys`, { token: tenant.partnerToken, body });
    if (reply.status !== 201) throw new Error(`enrollment key: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.key;
  }

  const deleteSite = (orgId: string, siteId: string) =>
    t.api.request('DELETE', `${sites(orgId)}/${siteId}`, { token: tenant.partnerToken });
  const enroll = (enrollmentKey: string, hostname: string) =>
    t.api.request('POST', '/api/v1/agents/enroll', { body: { enrollmentKey, hostname } });

  async function liveDevicesInDeletedSites() {
    const { rows } = await t.db.admin.query(
      'SELECT d.hostname FROM devices d JOIN sites s ON s.id = d.site_id WHERE d.deleted_at IS NULL AND s.deleted_at IS NOT NULL',
    );
    return rows;
  }

  it("an enrollment with that site's key either lands first (the deletion then answers 409) or is refused (401), never a 500", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const siteId = await createSite(tenant.orgId, `Enroll race ${round}`);
      const key = await createKey(tenant.orgId, { siteId });
      const [enrolled, deleted] = await Promise.all([
        enroll(key, `site-key-race-${round}`),
        deleteSite(tenant.orgId, siteId),
      ]);
      outcomes.add(`enroll ${enrolled.status}, delete ${deleted.status}`);
    }
    expect([...outcomes].filter((o) => o !== 'enroll 201, delete 409' && o !== 'enroll 401, delete 204')).toEqual([]);
    expect(await liveDevicesInDeletedSites()).toEqual([]);
  });

  it("an enrollment with an organization-wide key lands in a live site while the organization's first site is deleted, never a 500", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const org = await t.api.request('POST', orgs, {
        token: tenant.partnerToken,
        body: { name: `First site race ${round}` },
      });
      await createSite(org.body.id, 'Second');
      const key = await createKey(org.body.id, {});
      const [enrolled, deleted] = await Promise.all([
        enroll(key, `org-key-race-${round}`),
        deleteSite(org.body.id, org.body.site.id),
      ]);
      outcomes.add(`enroll ${enrolled.status}, delete ${deleted.status}`);
    }
    expect([...outcomes].filter((o) => !/^enroll (201|401), delete (204|409)$/.test(o))).toEqual([]);
    expect(await liveDevicesInDeletedSites()).toEqual([]);
  });

  it('a device moved into that site either arrives first (the deletion then answers 409) or is refused (400), never a 500', async () => {
    const { deviceId } = await enrollDevice(t.api, tenant, 'move-race');
    const outcomes = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const siteId = await createSite(tenant.orgId, `Move race ${round}`);
      const [moved, deleted] = await Promise.all([
        t.api.request('PATCH', `/api/v1/devices/${deviceId}`, { token: tenant.partnerToken, body: { siteId } }),
        deleteSite(tenant.orgId, siteId),
      ]);
      outcomes.add(`move ${moved.status}, delete ${deleted.status}`);
    }
    expect([...outcomes].filter((o) => o !== 'move 200, delete 409' && o !== 'move 400, delete 204')).toEqual([]);
    expect(await liveDevicesInDeletedSites()).toEqual([]);
  });

  it('an enrollment key created for that site is either revoked with it or refused (400)', async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < rounds; round++) {
      const siteId = await createSite(tenant.orgId, `Key race ${round}`);
      const [created, deleted] = await Promise.all([
        t.api.request('POST', `${orgs}/${tenant.orgId}/enrollment-keys`, {
          token: tenant.partnerToken,
          body: { siteId },
        }),
        deleteSite(tenant.orgId, siteId),
      ]);
      outcomes.add(`create ${created.status}, delete ${deleted.status}`);
    }
    expect([...outcomes].filter((o) => o !== 'create 201, delete 204' && o !== 'create 400, delete 204')).toEqual([]);
    const { rows } = await t.db.admin.query(
      'SELECT k.id FROM enrollment_keys k JOIN sites s ON s.id = k.site_id WHERE k.revoked_at IS NULL AND s.deleted_at IS NOT NULL',
    );
    expect(rows).toEqual([]);
  });
});
