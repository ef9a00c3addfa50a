import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
let laptop: { agentId: string; deviceId: string; token: string };
let server: { agentId: string; deviceId: string; token: string };
let foreign: { agentId: string; deviceId: string; token: string };

const define = (token: string, body: Record<string, unknown>) =>
  t.api.request('POST', '/api/v1/custom-fields', { token, body });
const put = (token: string, deviceId: string, key: string, value: unknown) =>
  t.api.request('PUT', `/api/v1/devices/${deviceId}/custom-fields/${key}`, { token, body: { value } });

async function updates(deviceId: string) {
  const { rows } = await t.db.admin.query<{ actorType: string; actorId: string; details: Record<string, unknown> }>(
    `SELECT actor_type AS "actorType", actor_id AS "actorId", details FROM audit_logs
      WHERE action = 'device.update' AND resource_id = :deviceId::uuid ORDER BY seq`,
    { deviceId },
  );
  return rows;
}

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  laptop = await enrollDevice(t.api, acme, 'LAPTOP-01');
  server = await enrollDevice(t.api, acme, 'SRV-01');
  foreign = await enrollDevice(t.api, globex, 'GLOBEX-01');
  for (const body of [
    { name: 'Asset tag', key: 'asset_tag', type: 'text', scriptWritable: true },
    { name: 'Seats', key: 'seats', type: 'number', min: 1, max: 500 },
    { name: 'Encrypted', key: 'encrypted', type: 'boolean', scriptWritable: true },
    { name: 'Warranty end', key: 'warranty_end', type: 'date' },
    { name: 'Tier', key: 'tier', type: 'dropdown', choices: ['gold', 'silver'], defaultValue: 'silver' },
    { name: 'Roles', key: 'roles', type: 'multi-select', choices: ['web', 'db', 'file'] },
    { name: 'Docs', key: 'docs', type: 'url' },
    { name: 'Owner', key: 'owner', type: 'text', required: true },
  ])
    expect((await define(acme.partnerToken, body)).status).toBe(201);
  await define(globex.partnerToken, { name: 'Asset tag', key: 'asset_tag', type: 'text', scriptWritable: true });
});

describe('custom field values', () => {
  it('are written per device, shown on GET /devices/{id} and audited as device.update with before and after', async () => {
    const reply = await put(acme.orgToken, laptop.deviceId, 'asset_tag', 'HQ-0042');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ deviceId: laptop.deviceId, key: 'asset_tag', type: 'text', value: 'HQ-0042' });
    for (const [key, value] of [
      ['seats', 25],
      ['encrypted', false],
      ['warranty_end', '2027-02-28'],
      ['roles', ['web', 'db']],
      ['docs', 'https://wiki.acme.test/laptop-01'],
    ] as const)
      expect((await put(acme.orgToken, laptop.deviceId, key, value)).status).toBe(200);
    await put(acme.orgToken, laptop.deviceId, 'asset_tag', 'HQ-0043');

    const device = await t.api.request('GET', `/api/v1/devices/${laptop.deviceId}`, { token: acme.orgToken });
    expect(device.body.customFields).toEqual({
      asset_tag: 'HQ-0043',
      docs: 'https://wiki.acme.test/laptop-01',
      encrypted: false,
      roles: ['web', 'db'],
      seats: 25,
      tier: 'silver',
      warranty_end: '2027-02-28',
    });
    expect(device.body.customFieldDetails.find((d: { key: string }) => d.key === 'tier')).toMatchObject({
      type: 'dropdown',
      source: 'default',
    });
    const rows = await updates(laptop.deviceId);
    expect(rows).toHaveLength(7);
    expect(rows.at(-1)!.details).toMatchObject({
      before: { customFields: { asset_tag: 'HQ-0042' } },
      after: { customFields: { asset_tag: 'HQ-0043' } },
    });
    // Writing the value a device already holds changes nothing and writes no audit row.
    await put(acme.orgToken, laptop.deviceId, 'asset_tag', 'HQ-0043');
    expect(await updates(laptop.deviceId)).toHaveLength(7);
  });

  it.each([
    ['seats', '12', 'A number field holds a number'],
    ['seats', 501, 'above the maximum'],
    ['encrypted', 'true', 'true or false'],
    ['warranty_end', '2027-02-30', 'YYYY-MM-DD'],
    ['warranty_end', '28/02/2027', 'YYYY-MM-DD'],
    ['tier', 'bronze', 'not one of'],
    ['roles', ['web', 'mail'], 'not one of'],
    ['docs', 'javascript:alert(1)', 'http or https'],
    ['asset_tag', 'x'.repeat(10_001), 'longer than 10000'],
    ['asset_tag', 42, 'holds a string'],
  ])('refuse %s = %j with a 400 naming body.value, and store nothing', async (key, value, message) => {
    const reply = await put(acme.orgToken, server.deviceId, key, value);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0]).toMatchObject({ path: 'body.value' });
    expect(reply.body.error.details[0].message).toContain(message);
    const device = await t.api.request('GET', `/api/v1/devices/${server.deviceId}`, { token: acme.orgToken });
    expect(device.body.customFields).toEqual({ tier: 'silver' });
  });

  it("stay inside their tenant: another tenant's device or an unknown key is 404", async () => {
    expect((await put(acme.orgToken, foreign.deviceId, 'asset_tag', 'X')).status).toBe(404);
    expect((await put(acme.orgToken, server.deviceId, 'no_such_field', 'X')).status).toBe(404);
  });

  it('are cleared with DELETE, except a required one', async () => {
    await put(acme.orgToken, server.deviceId, 'owner', 'Ada');
    const required = await t.api.request('DELETE', `/api/v1/devices/${server.deviceId}/custom-fields/owner`, {
      token: acme.orgToken,
    });
    expect(required.status).toBe(409);
    await put(acme.orgToken, server.deviceId, 'seats', 3);
    const cleared = await t.api.request('DELETE', `/api/v1/devices/${server.deviceId}/custom-fields/seats`, {
      token: acme.orgToken,
    });
    expect(cleared.status).toBe(204);
    const device = await t.api.request('GET', `/api/v1/devices/${server.deviceId}`, { token: acme.orgToken });
    expect(device.body.customFields.seats).toBeUndefined();
    expect((await updates(server.deviceId)).at(-1)!.details).toMatchObject({
      before: { customFields: { seats: 3 } },
      after: { customFields: { seats: null } },
    });
  });

  it('filter GET /devices with cf.<key>=<value>, and refuse other unknown query parameters', async () => {
    await put(acme.orgToken, server.deviceId, 'roles', ['db', 'file']);
    const hosts = async (query: string) => {
      const reply = await t.api.request('GET', `/api/v1/devices?${query}`, { token: acme.orgToken });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return reply.body.data.map((d: { hostname: string }) => d.hostname);
    };
    expect(await hosts('cf.asset_tag=HQ-0043')).toEqual(['LAPTOP-01']);
    expect(await hosts('cf.roles=db')).toEqual(['LAPTOP-01', 'SRV-01']);
    expect(await hosts('cf.roles=db&cf.encrypted=false')).toEqual(['LAPTOP-01']);
    expect(await hosts('cf.seats=25')).toEqual(['LAPTOP-01']);
    expect(await hosts('cf.asset_tag=nothing')).toEqual([]);
    // Globex's device holds no Acme value, and Acme sees no Globex device.
    const globexToken = globex.orgToken;
    await t.api.request('PUT', `/api/v1/devices/${foreign.deviceId}/custom-fields/asset_tag`, {
      token: globexToken,
      body: { value: 'HQ-0043' },
    });
    expect(await hosts('cf.asset_tag=HQ-0043')).toEqual(['LAPTOP-01']);
    const unknown = await t.api.request('GET', '/api/v1/devices?colour=red', { token: acme.orgToken });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].path).toBe('query.colour');
  });

  it('are a customField field of dynamic group filters', async () => {
    const reply = await t.api.request('POST', `/api/v1/orgs/organizations/${acme.orgId}/device-groups/preview`, {
      token: acme.orgToken,
      body: { filter: { field: 'customField:asset_tag', op: 'startsWith', value: 'hq-' } },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.data.map((d: { hostname: string }) => d.hostname)).toEqual(['LAPTOP-01']);
  });
});

describe('the agent custom-field route', () => {
  const agentPut = (agent: { token: string }, agentId: string, key: string, value: unknown) =>
    t.api.request('PUT', `/api/v1/agents/${agentId}/custom-fields/${key}`, { token: agent.token, body: { value } });

  it('lets a script set a scriptWritable field of its own device, with the agent as actor', async () => {
    const reply = await agentPut(server, server.agentId, 'encrypted', true);
    expect(reply.status).toBe(200);
    const [row] = (await updates(server.deviceId)).filter((r) => r.actorType === 'agent');
    expect(row).toMatchObject({ actorId: server.agentId, details: { after: { customFields: { encrypted: true } } } });
  });

  it("refuses another agent's device, fields not writable by scripts and invalid values", async () => {
    expect((await agentPut(server, laptop.agentId, 'encrypted', true)).status).toBe(403);
    expect((await agentPut(server, server.agentId, 'seats', 3)).status).toBe(403);
    expect((await agentPut(server, server.agentId, 'encrypted', 'yes')).status).toBe(400);
    expect((await agentPut({ token: 'lbt_nope' }, server.agentId, 'encrypted', true)).status).toBe(401);
    const device = await t.api.request('GET', `/api/v1/devices/${laptop.deviceId}`, { token: acme.orgToken });
    expect(device.body.customFields.encrypted).toBe(false);
  });

  it('is charged to the device hourly budget of custom field writes (429 beyond it)', async () => {
    await t.db.admin.query(
      `INSERT INTO agent_ingest_usage (device_id, kind, window_start, used)
       VALUES (:deviceId::uuid, 'fields', date_trunc('hour', now()), 1000)
       ON CONFLICT (device_id, kind) DO UPDATE SET used = 1000, window_start = date_trunc('hour', now())`,
      { deviceId: laptop.deviceId },
    );
    const reply = await agentPut(laptop, laptop.agentId, 'asset_tag', 'HQ-9999');
    expect(reply.status).toBe(429);
    expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(reply.body.error.code).toBe('RATE_LIMITED');
  });
});
