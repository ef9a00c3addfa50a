import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let annex: string;
const devices: Record<string, string> = {};
let foreignDevice: string;

const groupsPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/device-groups`;
const hostnames = (reply: { body: { data: { hostname: string }[] } }) => reply.body.data.map((d) => d.hostname).sort();

async function auditRows(action: string, resourceId?: string) {
  const { rows } = await t.db.admin.query<{ action: string; details: Record<string, unknown> }>(
    `SELECT action, details FROM audit_logs WHERE action = :action::text
        AND (:resourceId::uuid IS NULL OR resource_id = :resourceId::uuid) ORDER BY seq`,
    { action, resourceId: resourceId ?? null },
  );
  return rows;
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  const site = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
    token: tenant.orgToken,
    body: { name: 'Annex' },
  });
  annex = site.body.id;
  for (const [hostname, siteId] of [
    ['web-01', undefined],
    ['web-02', undefined],
    ['db-01', undefined],
    ['kiosk-01', annex],
  ] as const)
    devices[hostname] = (await enrollDevice(t.api, tenant, hostname, siteId)).deviceId;
  foreignDevice = (await enrollDevice(t.api, other, 'web-99')).deviceId;
  await t.db.admin.query(
    `UPDATE devices SET os_type = CASE WHEN hostname LIKE 'web-%' THEN 'linux' ELSE 'windows' END,
        os_version = '22.04', last_ip = CASE hostname WHEN 'web-01' THEN '10.1.2.3' WHEN 'db-01' THEN '192.168.0.5' END,
        agent_status = CASE hostname WHEN 'web-02' THEN 'degraded' ELSE 'online' END,
        last_seen_at = CASE hostname WHEN 'db-01' THEN now() - interval '3 days' ELSE now() END`,
  );
});

describe('static device groups', () => {
  it('are created, read, listed and renamed, each change audited', async () => {
    const created = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Servers', type: 'static' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Servers', type: 'static', filter: null, siteId: null, parentId: null });
    const got = await t.api.request('GET', `/api/v1/device-groups/${created.body.id}`, { token: tenant.orgToken });
    expect(got.body).toEqual(created.body);
    const renamed = await t.api.request('PATCH', `/api/v1/device-groups/${created.body.id}`, {
      token: tenant.orgToken,
      body: { name: 'All servers' },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('All servers');
    const list = await t.api.request('GET', `${groupsPath(tenant.orgId)}?search=server`, { token: tenant.orgToken });
    expect(list.body.data.map((g: { id: string }) => g.id)).toContain(created.body.id);
    expect(await auditRows('device_group.create', created.body.id)).toHaveLength(1);
    const [update] = await auditRows('device_group.update', created.body.id);
    expect(update!.details).toMatchObject({ before: { name: 'Servers' }, after: { name: 'All servers' } });
  });

  it('refuse a second group of the same name in the organization, ignoring case, with 409 CONFLICT', async () => {
    await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Kiosks', type: 'static' },
    });
    const again = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'KIOSKS', type: 'static' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
    const elsewhere = await t.api.request('POST', groupsPath(other.orgId), {
      token: other.orgToken,
      body: { name: 'Kiosks', type: 'static' },
    });
    expect(elsewhere.status).toBe(201);
  });

  it('add members in bulk: added, skipped when already there or named twice, refused per id for another tenant or a deleted device', async () => {
    const group = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Patch wave 1', type: 'static' },
    });
    const deleted = (await enrollDevice(t.api, tenant, 'gone-01')).deviceId;
    await t.api.request('DELETE', `/api/v1/devices/${deleted}`, { token: tenant.orgToken });
    const path = `/api/v1/device-groups/${group.body.id}/members`;
    const first = await t.api.request('POST', path, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['web-01'], devices['web-02'], devices['web-01'], foreignDevice, deleted] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      added: 2,
      skipped: 1,
      refused: [
        { deviceId: foreignDevice, code: 'NOT_FOUND', message: 'Device not found' },
        { deviceId: deleted, code: 'NOT_FOUND', message: 'Device not found' },
      ],
    });
    const second = await t.api.request('POST', path, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['web-01']] },
    });
    expect(second.body).toEqual({ added: 0, skipped: 1, refused: [] });
    const members = await t.api.request('GET', `${path}?sort=hostname`, { token: tenant.orgToken });
    expect(hostnames(members)).toEqual(['web-01', 'web-02']);
    expect(members.body.pagination).toEqual({ page: 1, limit: 50, total: 2, totalPages: 1 });
    const { rows } = await t.db.admin.query('SELECT device_id FROM device_group_members WHERE device_id = :id::uuid', {
      id: foreignDevice,
    });
    expect(rows).toEqual([]);
    const [audit] = await auditRows('device_group.member.add', group.body.id);
    expect((audit!.details.deviceIds as string[]).sort()).toEqual([devices['web-01'], devices['web-02']].sort());
  });

  it('remove members, and a deleted device leaves every static group', async () => {
    const group = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Temporary', type: 'static' },
    });
    const doomed = (await enrollDevice(t.api, tenant, 'doomed-01')).deviceId;
    const path = `/api/v1/device-groups/${group.body.id}/members`;
    await t.api.request('POST', path, { token: tenant.orgToken, body: { deviceIds: [devices['db-01'], doomed] } });
    const removed = await t.api.request('POST', `${path}/remove`, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['db-01'], devices['web-01'], foreignDevice] },
    });
    expect(removed.body).toEqual({
      removed: 1,
      skipped: 1,
      refused: [{ deviceId: foreignDevice, code: 'NOT_FOUND', message: 'Device not found' }],
    });
    await t.api.request('DELETE', `/api/v1/devices/${doomed}`, { token: tenant.orgToken });
    const { rows } = await t.db.admin.query('SELECT 1 FROM device_group_members WHERE group_id = :id::uuid', {
      id: group.body.id,
    });
    expect(rows).toEqual([]);
    expect(await auditRows('device_group.member.remove', group.body.id)).toHaveLength(1);
  });

  it("narrowed to a site refuse devices of the organization's other sites", async () => {
    const group = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Annex kiosks', type: 'static', siteId: annex },
    });
    const reply = await t.api.request('POST', `/api/v1/device-groups/${group.body.id}/members`, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['kiosk-01'], devices['web-01']] },
    });
    expect(reply.body).toEqual({
      added: 1,
      skipped: 0,
      refused: [
        { deviceId: devices['web-01'], code: 'OUTSIDE_SITE', message: "The device is not in the group's site" },
      ],
    });
  });
});

describe('nesting and placement', () => {
  it('nests groups of one organization and refuses a cycle, another tenant’s site or parent', async () => {
    const create = (name: string, extra: Record<string, unknown> = {}) =>
      t.api.request('POST', groupsPath(tenant.orgId), {
        token: tenant.orgToken,
        body: { name, type: 'static', ...extra },
      });
    const top = await create('Region');
    const child = await create('Region / north', { parentId: top.body.id });
    expect(child.body.parentId).toBe(top.body.id);
    const cycle = await t.api.request('PATCH', `/api/v1/device-groups/${top.body.id}`, {
      token: tenant.orgToken,
      body: { parentId: child.body.id },
    });
    expect(cycle.status).toBe(400);
    expect(cycle.body.error.details[0].path).toBe('body.parentId');
    const self = await t.api.request('PATCH', `/api/v1/device-groups/${top.body.id}`, {
      token: tenant.orgToken,
      body: { parentId: top.body.id },
    });
    expect(self.status).toBe(400);
    const foreignParent = await t.api.request('POST', groupsPath(other.orgId), {
      token: other.orgToken,
      body: { name: 'Theirs', type: 'static' },
    });
    const badParent = await create('Bad parent', { parentId: foreignParent.body.id });
    expect(badParent.status).toBe(400);
    expect(badParent.body.error.details[0].path).toBe('body.parentId');
    const badSite = await create('Bad site', { siteId: other.siteId });
    expect(badSite.status).toBe(400);
    expect(badSite.body.error.details[0].path).toBe('body.siteId');
    const deleted = await t.api.request('DELETE', `/api/v1/device-groups/${top.body.id}`, { token: tenant.orgToken });
    expect(deleted.status).toBe(204);
    const orphan = await t.api.request('GET', `/api/v1/device-groups/${child.body.id}`, { token: tenant.orgToken });
    expect(orphan.body.parentId).toBeNull();
    const [audit] = await auditRows('device_group.delete', top.body.id);
    expect(audit!.details).toMatchObject({ before: { name: 'Region', type: 'static' } });
  });
});

describe('dynamic device groups', () => {
  const linuxWeb = {
    all: [
      { field: 'osType', op: 'equals', value: 'LINUX' },
      { field: 'hostname', op: 'startsWith', value: 'web-' },
      { not: { field: 'agentStatus', op: 'equals', value: 'degraded' } },
    ],
  };

  it('hold the devices their filter matches, evaluated at each read', async () => {
    const group = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Healthy linux web', type: 'dynamic', filter: linuxWeb },
    });
    expect(group.status).toBe(201);
    expect(group.body.filter).toEqual(linuxWeb);
    const path = `/api/v1/device-groups/${group.body.id}/members`;
    expect(hostnames(await t.api.request('GET', path, { token: tenant.orgToken }))).toEqual(['web-01']);
    await t.db.admin.query(`UPDATE devices SET agent_status = 'online' WHERE hostname = 'web-02'`);
    expect(hostnames(await t.api.request('GET', path, { token: tenant.orgToken }))).toEqual(['web-01', 'web-02']);
    await t.db.admin.query(`UPDATE devices SET agent_status = 'degraded' WHERE hostname = 'web-02'`);
  });

  it('refuse members added or removed by id', async () => {
    const group = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        name: 'Everything windows',
        type: 'dynamic',
        filter: { field: 'osType', op: 'equals', value: 'windows' },
      },
    });
    for (const suffix of ['', '/remove']) {
      const reply = await t.api.request('POST', `/api/v1/device-groups/${group.body.id}/members${suffix}`, {
        token: tenant.orgToken,
        body: { deviceIds: [devices['db-01']] },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error.message).toMatch(/dynamic group/);
    }
  });

  it('need a filter, and a static group takes none', async () => {
    const noFilter = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'No filter', type: 'dynamic' },
    });
    expect(noFilter.status).toBe(400);
    expect(noFilter.body.error.details[0].path).toBe('body.filter');
    const staticWithFilter = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Static with filter', type: 'static', filter: linuxWeb },
    });
    expect(staticWithFilter.status).toBe(400);
  });

  it.each([
    [{ field: 'lastIp', op: 'inCidr', value: '10.0.0.0/8' }, ['web-01']],
    [{ field: 'lastIp', op: 'exists', value: false }, ['kiosk-01', 'web-02']],
    [{ field: 'lastSeenAt', op: 'withinDays', value: 1 }, ['kiosk-01', 'web-01', 'web-02']],
    [{ field: 'online', op: 'equals', value: false }, ['db-01']],
    [{ field: 'siteId', op: 'equals', value: 'SITE' }, ['kiosk-01']],
    [{ field: 'hostname', op: 'matches', value: '^(db|kiosk)-0[0-9]$' }, ['db-01', 'kiosk-01']],
    [{ field: 'hostname', op: 'in', value: ['WEB-01', 'db-01'] }, ['db-01', 'web-01']],
    [{ field: 'hostname', op: 'endsWith', value: '-01' }, ['db-01', 'kiosk-01', 'web-01']],
    [{ field: 'hostname', op: 'contains', value: '%' }, []],
    [
      {
        any: [
          { field: 'osType', op: 'notEquals', value: 'linux' },
          { field: 'agentStatus', op: 'in', value: ['degraded'] },
        ],
      },
      ['db-01', 'kiosk-01', 'web-02'],
    ],
    [{ field: 'createdAt', op: 'after', value: '2000-01-01T00:00:00Z' }, ['db-01', 'kiosk-01', 'web-01', 'web-02']],
  ])('preview %j without saving it', async (filter, expected) => {
    const resolved = JSON.parse(JSON.stringify(filter).replace('SITE', annex));
    const reply = await t.api.request('POST', `${groupsPath(tenant.orgId)}/preview?sort=hostname`, {
      token: tenant.orgToken,
      body: { filter: resolved },
    });
    expect(reply.status).toBe(200);
    const initial = ['db-01', 'kiosk-01', 'web-01', 'web-02'];
    expect(hostnames(reply).filter((h) => initial.includes(h))).toEqual(expected);
  });

  it('compare lastSeenAt to the instant within its hour (the index narrows by the hour, the time itself decides)', async () => {
    const own = await createTenant(t.api, 'Hours');
    const { deviceId } = await enrollDevice(t.api, own, 'hour-01');
    await t.db.admin.query(`UPDATE devices SET last_seen_at = '2026-03-01T10:40:00Z' WHERE id = :id::uuid`, {
      id: deviceId,
    });
    const matches = async (op: string, value: string) => {
      const reply = await t.api.request('POST', `${groupsPath(own.orgId)}/preview`, {
        token: own.orgToken,
        body: { filter: { field: 'lastSeenAt', op, value } },
      });
      expect(reply.status).toBe(200);
      return hostnames(reply).includes('hour-01');
    };
    const cases: [string, string, boolean][] = [
      ['gt', '2026-03-01T10:20:00Z', true],
      ['gt', '2026-03-01T10:50:00Z', false],
      ['gte', '2026-03-01T10:40:00Z', true],
      ['after', '2026-03-01T11:00:00+01:00', true],
      ['lt', '2026-03-01T10:50:00Z', true],
      ['lt', '2026-03-01T10:20:00Z', false],
      ['lte', '2026-03-01T10:40:00Z', true],
      ['before', '2026-03-01T10:40:00Z', false],
    ];
    for (const [op, value, expected] of cases)
      expect([op, value, await matches(op, value)]).toEqual([op, value, expected]);
  });

  it.each([
    [{ field: 'hostname; DROP TABLE devices', op: 'equals', value: 'x' }, 'body.filter.field'],
    [{ field: 'hostname', op: 'equals', value: "x' OR '1'='1" }, null],
    [{ field: 'hostname', op: 'gt', value: 'a' }, 'body.filter.op'],
    [{ field: 'hostname', op: 'sql', value: 'a' }, 'body.filter.op'],
    [{ field: 'lastIp', op: 'inCidr', value: '10.0.0.0/99' }, 'body.filter.value'],
    [{ field: 'online', op: 'equals', value: 'yes' }, 'body.filter.value'],
    [{ field: 'hostname', op: 'matches', value: '(a)\\1' }, 'body.filter.value'],
    [{ all: [{ field: 'hostname', op: 'equals', value: 'a', extra: 1 }] }, 'body.filter.all.0.extra'],
    [{ all: [] }, 'body.filter.all'],
    [{ field: 'constructor', op: 'equals', value: 'a' }, 'body.filter.field'],
    [{ field: 'hostname:x', op: 'equals', value: 'a' }, 'body.filter.field'],
  ])('refuses %j with a 400 naming the path', async (filter, path) => {
    const reply = await t.api.request('POST', `${groupsPath(tenant.orgId)}/preview`, {
      token: tenant.orgToken,
      body: { filter },
    });
    if (path === null) {
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual([]);
    } else {
      expect(reply.status).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const { rows } = await t.db.admin.query('SELECT count(*)::int AS n FROM devices');
    expect(rows[0]!.n).toBeGreaterThan(0);
  });

  it('refuses a filter deeper than 8 levels or with more than 100 conditions', async () => {
    let deep: unknown = { field: 'hostname', op: 'equals', value: 'a' };
    for (let i = 0; i < 8; i++) deep = { not: deep };
    const tooDeep = await t.api.request('POST', `${groupsPath(tenant.orgId)}/preview`, {
      token: tenant.orgToken,
      body: { filter: deep },
    });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body.error.details[0].message).toMatch(/at most 8 levels/);
    const wide = { any: Array.from({ length: 101 }, (_, i) => ({ field: 'hostname', op: 'equals', value: `h${i}` })) };
    const tooWide = await t.api.request('POST', `${groupsPath(tenant.orgId)}/preview`, {
      token: tenant.orgToken,
      body: { filter: wide },
    });
    expect(tooWide.status).toBe(400);
    expect(tooWide.body.error.details[0].message).toMatch(/at most 100 conditions/);
    const eight = { any: Array.from({ length: 100 }, (_, i) => ({ field: 'hostname', op: 'equals', value: `h${i}` })) };
    const ok = await t.api.request('POST', `${groupsPath(tenant.orgId)}/preview`, {
      token: tenant.orgToken,
      body: { filter: eight },
    });
    expect(ok.status).toBe(200);
  });
});

describe("a device's groups", () => {
  it('lists the static and dynamic groups it belongs to', async () => {
    const staticGroup = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Db hand-picked', type: 'static' },
    });
    await t.api.request('POST', `/api/v1/device-groups/${staticGroup.body.id}/members`, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['db-01']] },
    });
    const dynamic = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Db by name', type: 'dynamic', filter: { field: 'hostname', op: 'startsWith', value: 'db' } },
    });
    await t.api.request('POST', groupsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Web by name', type: 'dynamic', filter: { field: 'hostname', op: 'startsWith', value: 'web' } },
    });
    const reply = await t.api.request('GET', `/api/v1/devices/${devices['db-01']}/groups`, { token: tenant.orgToken });
    expect(reply.status).toBe(200);
    const ids = reply.body.data.map((g: { id: string }) => g.id);
    expect(ids).toContain(staticGroup.body.id);
    expect(ids).toContain(dynamic.body.id);
    expect(reply.body.data.map((g: { name: string }) => g.name)).not.toContain('Web by name');
  });
});

describe('tenancy and permissions', () => {
  it("never reaches or names another tenant's group, and viewers only read", async () => {
    const theirs = await t.api.request('POST', groupsPath(other.orgId), {
      token: other.orgToken,
      body: { name: 'Their group', type: 'static' },
    });
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { name: 'Mine now' }],
      ['DELETE', '', undefined],
      ['GET', '/members', undefined],
      ['POST', '/members', { deviceIds: [devices['web-01']] }],
    ] as const) {
      const reply = await t.api.request(method, `/api/v1/device-groups/${theirs.body.id}${suffix}`, {
        token: tenant.orgToken,
        body,
      });
      expect(reply.status).toBe(404);
      expect(JSON.stringify(reply.body)).not.toContain('Their group');
    }
    expect((await t.api.request('GET', groupsPath(other.orgId), { token: tenant.orgToken })).status).toBe(404);
    expect(
      (await t.api.request('GET', `/api/v1/devices/${foreignDevice}/groups`, { token: tenant.orgToken })).status,
    ).toBe(404);
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', groupsPath(tenant.orgId), { token: viewer })).status).toBe(200);
    const refused = await t.api.request('POST', groupsPath(tenant.orgId), {
      token: viewer,
      body: { name: 'Viewer group', type: 'static' },
    });
    expect(refused.status).toBe(403);
  });
});
