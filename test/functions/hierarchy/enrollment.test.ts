import { createHash } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const ENROLL = '/api/v1/agents/enroll';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const t = useApi();
let a: Tenant;
let b: Tenant;
let secondSiteA: string;

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  const site = await t.api.request('POST', `${ORGS}/${a.orgId}/sites`, { token: a.orgToken, body: { name: 'Branch' } });
  if (site.status !== 201) throw new Error(`site: ${site.status}`);
  secondSiteA = site.body.id;
});

const savedSecret = process.env.AGENT_ENROLLMENT_SECRET;
afterEach(() => {
  if (savedSecret === undefined) delete process.env.AGENT_ENROLLMENT_SECRET;
  else process.env.AGENT_ENROLLMENT_SECRET = savedSecret;
});

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({ error: { code, message: expect.any(String) } });
}

async function createKey(body: Record<string, unknown> = {}, tenant = a) {
  const reply = await t.api.request('POST', `${ORGS}/${tenant.orgId}/enrollment-keys`, {
    token: tenant.orgToken,
    body,
  });
  if (reply.status !== 201) throw new Error(`enrollment key: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as { id: string; key: string; siteId: string | null };
}

const enroll = (body: Record<string, unknown>) => t.api.request('POST', ENROLL, { body });

async function devicesNamed(hostname: string) {
  const { rows } = await t.db.admin.query('SELECT * FROM devices WHERE hostname = :hostname::text', { hostname });
  return rows;
}

async function deviceCount(): Promise<number> {
  const { rows } = await t.db.admin.query<{ n: number }>('SELECT count(*) AS n FROM devices');
  return rows[0]!.n;
}

describe('enrollment keys', () => {
  it('an org admin creates an enrollment key for a site and sees the key, prefixed lbe_, once', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/enrollment-keys`, {
      token: a.orgToken,
      body: { siteId: secondSiteA, name: 'Branch rollout' },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      id: expect.any(String),
      orgId: a.orgId,
      siteId: secondSiteA,
      name: 'Branch rollout',
      expiresAt: null,
      revokedAt: null,
    });
    expect(reply.body.key).toMatch(/^lbe_[A-Za-z0-9_-]{43}$/);
    expect(reply.body.keyPrefix).toBe(reply.body.key.slice(0, 12));
  });

  it('the database stores only the hash of an enrollment key', async () => {
    const { id, key } = await createKey();
    const { rows } = await t.db.admin.query('SELECT * FROM enrollment_keys WHERE id = :id::uuid', { id });
    expect(rows[0]!.key_hash).toBe(sha256(key));
    expect(JSON.stringify(rows[0])).not.toContain(key);
  });

  it('a key for a site of another organization is refused (400) and not stored', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/enrollment-keys`, {
      token: a.orgToken,
      body: { siteId: b.siteId, name: 'Cross-tenant' },
    });
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.siteId' })]);
    const { rows } = await t.db.admin.query('SELECT 1 FROM enrollment_keys WHERE name = :name::text', {
      name: 'Cross-tenant',
    });
    expect(rows).toEqual([]);
  });

  it('a key request with an unknown field is refused (400) naming the field, and nothing is stored', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/enrollment-keys`, {
      token: a.orgToken,
      body: { name: 'Typo key', sitId: secondSiteA },
    });
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([
      { path: 'body.sitId', code: 'unrecognized_keys', message: 'Unknown field sitId' },
    ]);
    const { rows } = await t.db.admin.query('SELECT 1 FROM enrollment_keys WHERE name = :name::text', {
      name: 'Typo key',
    });
    expect(rows).toEqual([]);
  });

  it("lists the organization's keys newest first, revoked ones with revokedAt, never the keys themselves", async () => {
    const tenant = await createTenant(t.api, 'Listing');
    const first = await createKey({ name: 'First' }, tenant);
    const second = await createKey({ name: 'Second', siteId: tenant.siteId }, tenant);
    await t.api.request('DELETE', `${ORGS}/${tenant.orgId}/enrollment-keys/${first.id}`, { token: tenant.orgToken });
    const reply = await t.api.request('GET', `${ORGS}/${tenant.orgId}/enrollment-keys`, { token: tenant.orgToken });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual([
      expect.objectContaining({ id: second.id, name: 'Second', siteId: tenant.siteId, revokedAt: null }),
      expect.objectContaining({ id: first.id, name: 'First', siteId: null, revokedAt: expect.any(String) }),
    ]);
    expect(reply.body.pagination).toEqual({ page: 1, limit: 50, total: 2, totalPages: 1 });
    expect(JSON.stringify(reply.body)).not.toContain(first.key);
    expect(JSON.stringify(reply.body)).not.toContain(second.key);
  });

  it('a key cannot be created already expired (400)', async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/enrollment-keys`, {
      token: a.orgToken,
      body: { expiresAt: '2000-01-01T00:00:00Z' },
    });
    expectError(reply, 400, 'VALIDATION_FAILED');
  });
});

describe('agent enrollment', () => {
  it('a valid key enrolls an agent (201) and returns its agent id, device id, site id and token', async () => {
    const { key } = await createKey({ siteId: secondSiteA });
    const reply = await enroll({
      enrollmentKey: key,
      hostname: 'ws-001',
      osType: 'windows',
      osVersion: '10.0.22631',
      agentVersion: '1.4.2',
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      agentId: expect.any(String),
      deviceId: expect.any(String),
      siteId: secondSiteA,
      token: expect.stringMatching(/^lba_/),
    });
  });

  it("the device is stored in the key's site with the reported hostname, OS and agent version", async () => {
    const { key } = await createKey({ siteId: secondSiteA });
    const { body } = await enroll({
      enrollmentKey: key,
      hostname: 'ws-002',
      osType: 'linux',
      osVersion: 'Ubuntu 24.04',
      agentVersion: '1.4.3',
    });
    const { rows } = await t.db.admin.query(
      'SELECT org_id, site_id, hostname, os_type, os_version, agent_version, deleted_at FROM devices WHERE id = :id::uuid',
      {
        id: body.deviceId,
      },
    );
    expect(rows).toEqual([
      {
        org_id: a.orgId,
        site_id: secondSiteA,
        hostname: 'ws-002',
        os_type: 'linux',
        os_version: 'Ubuntu 24.04',
        agent_version: '1.4.3',
        deleted_at: null,
      },
    ]);
    const agent = await t.db.admin.query('SELECT id FROM agents WHERE device_id = :id::uuid', { id: body.deviceId });
    expect(agent.rows).toEqual([{ id: body.agentId }]);
  });

  it("a key without a site enrolls into the organization's first site", async () => {
    const { key, siteId } = await createKey();
    expect(siteId).toBeNull();
    const { status, body } = await enroll({ enrollmentKey: key, hostname: 'ws-003' });
    expect(status).toBe(201);
    const { rows } = await t.db.admin.query('SELECT site_id FROM devices WHERE id = :id::uuid', { id: body.deviceId });
    expect(rows).toEqual([{ site_id: a.siteId }]);
  });

  it('the agent token is stored only as its SHA-256 hash', async () => {
    const { key } = await createKey();
    const { body } = await enroll({ enrollmentKey: key, hostname: 'ws-004' });
    const { rows } = await t.db.admin.query('SELECT * FROM agents WHERE id = :id::uuid', { id: body.agentId });
    expect(rows[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.token_hash).toBe(sha256(body.token));
    expect(JSON.stringify(rows[0])).not.toContain(body.token);
    const device = await t.db.admin.query('SELECT * FROM devices WHERE id = :id::uuid', { id: body.deviceId });
    expect(JSON.stringify(device.rows[0])).not.toContain(body.token);
  });

  it('an unknown enrollment key is refused (401) and no device is stored', async () => {
    expectError(
      await enroll({ enrollmentKey: `lbe_${'x'.repeat(43)}`, hostname: 'bad-key-host' }),
      401,
      'UNAUTHENTICATED',
    );
    expect(await devicesNamed('bad-key-host')).toEqual([]);
  });

  it('a revoked enrollment key is refused (401) and no device is stored', async () => {
    const { id, key } = await createKey();
    expect(
      (await t.api.request('DELETE', `${ORGS}/${a.orgId}/enrollment-keys/${id}`, { token: a.orgToken })).status,
    ).toBe(204);
    expectError(await enroll({ enrollmentKey: key, hostname: 'revoked-key-host' }), 401, 'UNAUTHENTICATED');
    expect(await devicesNamed('revoked-key-host')).toEqual([]);
  });

  it('an expired enrollment key is refused (401) and no device is stored', async () => {
    const { id, key } = await createKey({ expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await t.db.admin.query("UPDATE enrollment_keys SET expires_at = now() - interval '1 minute' WHERE id = :id::uuid", {
      id,
    });
    expectError(await enroll({ enrollmentKey: key, hostname: 'expired-key-host' }), 401, 'UNAUTHENTICATED');
    expect(await devicesNamed('expired-key-host')).toEqual([]);
  });

  it('a key of a deleted organization is refused (401)', async () => {
    const org = await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Gone' } });
    const key = await t.api.request('POST', `${ORGS}/${org.body.id}/enrollment-keys`, {
      token: a.partnerToken,
      body: {},
    });
    expect(key.status).toBe(201);
    expect((await t.api.request('DELETE', `${ORGS}/${org.body.id}`, { token: a.partnerToken })).status).toBe(204);
    expectError(await enroll({ enrollmentKey: key.body.key, hostname: 'gone-org-host' }), 401, 'UNAUTHENTICATED');
    expect(await devicesNamed('gone-org-host')).toEqual([]);
  });

  it.each([
    ['a missing hostname', {}, 'body.hostname'],
    ['a hostname of 256 characters', { hostname: 'h'.repeat(256) }, 'body.hostname'],
    ['a blank hostname', { hostname: '   ' }, 'body.hostname'],
    ['an osType of 51 characters', { hostname: 'ok-host', osType: 'o'.repeat(51) }, 'body.osType'],
  ])('a body with %s is refused (400) naming the field, and nothing is stored', async (_, fields, path) => {
    const { key } = await createKey();
    const before = await deviceCount();
    const reply = await enroll({ enrollmentKey: key, ...fields });
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
    expect(await deviceCount()).toBe(before);
  });

  it('an unknown extra field from a newer agent is dropped: the agent enrolls (201) and the field is stored nowhere', async () => {
    const { key } = await createKey();
    const reply = await enroll({ enrollmentKey: key, hostname: 'extra-host', cpuModel: 'marker-cpu-model-x9' });
    expect(reply.status).toBe(201);
    const devices = await devicesNamed('extra-host');
    expect(devices).toHaveLength(1);
    expect(JSON.stringify(devices[0])).not.toContain('marker-cpu-model-x9');
  });

  it('a body that is not JSON is refused (400)', async () => {
    expectError(
      await t.api.request('POST', ENROLL, { rawBody: '{"hostname":', headers: { 'content-type': 'application/json' } }),
      400,
      'VALIDATION_FAILED',
    );
  });

  describe('with AGENT_ENROLLMENT_SECRET configured', () => {
    it('a missing enrollment secret is refused (401) and no device is stored', async () => {
      process.env.AGENT_ENROLLMENT_SECRET = 'fleet-secret-1';
      const { key } = await createKey();
      expectError(await enroll({ enrollmentKey: key, hostname: 'no-secret-host' }), 401, 'UNAUTHENTICATED');
      expect(await devicesNamed('no-secret-host')).toEqual([]);
    });

    it('a wrong enrollment secret is refused (401) and no device is stored', async () => {
      process.env.AGENT_ENROLLMENT_SECRET = 'fleet-secret-1';
      const { key } = await createKey();
      expectError(
        await enroll({ enrollmentKey: key, hostname: 'wrong-secret-host', enrollmentSecret: 'fleet-secret-2' }),
        401,
        'UNAUTHENTICATED',
      );
      expect(await devicesNamed('wrong-secret-host')).toEqual([]);
    });

    it('the right enrollment secret enrolls the agent (201)', async () => {
      process.env.AGENT_ENROLLMENT_SECRET = 'fleet-secret-1';
      const { key } = await createKey();
      const reply = await enroll({
        enrollmentKey: key,
        hostname: 'right-secret-host',
        enrollmentSecret: 'fleet-secret-1',
      });
      expect(reply.status).toBe(201);
      expect(await devicesNamed('right-secret-host')).toHaveLength(1);
    });
  });

  it('deleting the device (204) revokes its agent', async () => {
    const { key } = await createKey();
    const { body } = await enroll({ enrollmentKey: key, hostname: 'to-delete' });
    expect((await t.api.request('DELETE', `/api/v1/devices/${body.deviceId}`, { token: a.orgToken })).status).toBe(204);
    const agent = await t.db.admin.query<{ revoked_at: Date | null }>(
      'SELECT revoked_at FROM agents WHERE id = :id::uuid',
      { id: body.agentId },
    );
    expect(agent.rows[0]!.revoked_at).toBeInstanceOf(Date);
    const device = await t.db.admin.query<{ deleted_at: Date | null }>(
      'SELECT deleted_at FROM devices WHERE id = :id::uuid',
      { id: body.deviceId },
    );
    expect(device.rows[0]!.deleted_at).toBeInstanceOf(Date);
    expectError(
      await t.api.request('GET', `/api/v1/devices/${body.deviceId}`, { token: a.orgToken }),
      404,
      'NOT_FOUND',
    );
  });
});
