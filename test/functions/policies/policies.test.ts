import { beforeAll, describe, expect, it } from 'vitest';
import { effectivePoliciesOf, effectivePoliciesOfDevices } from '#shared/policies/effective.ts';
import { useApi } from '#test/support/api.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let secondOrg: { id: string; siteId: string };
let device: { agentId: string; deviceId: string; token: string };
let otherDevice: { agentId: string; deviceId: string; token: string };

const cpu = (key = 'cpu', threshold = 90) => ({
  key,
  type: 'metric',
  severity: 'high',
  metric: 'cpu.percent',
  op: 'gt',
  threshold,
  clearThreshold: threshold - 10,
  windowSeconds: 300,
  aggregation: 'avg',
  pendingSeconds: 0,
});

async function policy(token: string, body: Record<string, unknown>) {
  const reply = await t.api.request('POST', '/api/v1/policies', { token, body: { kind: 'monitoring', ...body } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; version: number };
}
async function assign(token: string, policyId: string, body: Record<string, unknown>, status = 201) {
  const reply = await t.api.request('POST', `/api/v1/policies/${policyId}/assignments`, { token, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  return reply.body as { id: string };
}
const effective = async (deviceId = device.deviceId, token = tenant.partnerToken) => {
  const reply = await t.api.request('GET', `/api/v1/devices/${deviceId}/effective-policies?kind=monitoring`, { token });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as {
    configVersion: string;
    items: { key: string; item: any; origin: any; overridden: any[] }[];
    exempted: any[];
    blocked: any[];
  };
};
const origins = async (deviceId = device.deviceId) =>
  Object.fromEntries((await effective(deviceId)).items.map((i) => [i.key, [i.origin.level, i.item.threshold]]));

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  device = await enrollDevice(t.api, tenant, 'WS-1');
  otherDevice = await enrollDevice(t.api, other, 'OTHER-1');
  const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: 'Acme Second' },
  });
  secondOrg = { id: org.body.id, siteId: org.body.site.id };
});

describe('policies', () => {
  it('creates an organization policy and a partner library, audited as policy.create', async () => {
    const own = await policy(tenant.orgToken, { name: 'Servers', orgId: tenant.orgId, items: [cpu()] });
    expect(own).toMatchObject({ version: 1, availability: 'organization', orgId: tenant.orgId });
    const library = await policy(tenant.partnerToken, { name: 'Baseline', availability: 'partner', items: [cpu()] });
    expect(library).toMatchObject({ availability: 'partner', orgId: null, partnerId: tenant.partnerId });
    expect((await auditRowsOf(t.db.admin, 'policy.create', own.id)).map((r) => r.orgId)).toEqual([tenant.orgId]);
    // A partner library is in every organization's trail.
    expect((await auditRowsOf(t.db.admin, 'policy.create', library.id)).map((r) => r.orgId).sort()).toEqual(
      [tenant.orgId, secondOrg.id].sort(),
    );
  });

  it('refuses bad items with a 400 naming the field, and stores nothing', async () => {
    const before = await t.db.admin.query('SELECT count(*)::int AS n FROM policies');
    const cases: [unknown, string][] = [
      [[{ ...cpu(), threshold: 'high' }], 'body.items.0.threshold'],
      [[{ ...cpu(), clearThreshold: 95 }], 'body.items.0.clearThreshold'],
      [[cpu('a'), cpu('a')], 'body.items.1.key'],
      [[{ key: 'x', type: 'offline', severity: 'low', minutes: 0 }], 'body.items.0.minutes'],
      [[{ key: 'x', type: 'teleport', severity: 'low' }], 'body.items.0.type'],
      [[{ ...cpu(), aggregation: 'median' }], 'body.items.0.aggregation'],
    ];
    for (const [items, path] of cases) {
      const reply = await t.api.request('POST', '/api/v1/policies', {
        token: tenant.partnerToken,
        body: { kind: 'monitoring', name: 'Bad', orgId: tenant.orgId, items },
      });
      expect(reply.status, JSON.stringify(items)).toBe(400);
      expect(JSON.stringify(reply.body), path).toContain(path);
    }
    const none = await t.api.request('POST', '/api/v1/policies', {
      token: tenant.partnerToken,
      body: { kind: 'monitoring', name: 'No owner', items: [] },
    });
    expect(none.status).toBe(400);
    const after = await t.db.admin.query('SELECT count(*)::int AS n FROM policies');
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it('versions change with the items only, audited as policy.update with before and after', async () => {
    const p = await policy(tenant.partnerToken, { name: 'Versions', orgId: tenant.orgId, items: [cpu()] });
    const renamed = await t.api.request('PATCH', `/api/v1/policies/${p.id}`, {
      token: tenant.partnerToken,
      body: { name: 'Versions renamed' },
    });
    expect(renamed.body.version).toBe(1);
    const changed = await t.api.request('PATCH', `/api/v1/policies/${p.id}`, {
      token: tenant.partnerToken,
      body: { items: [cpu('cpu', 80)] },
    });
    expect(changed.body.version).toBe(2);
    const versions = await t.api.request('GET', `/api/v1/policies/${p.id}/versions`, { token: tenant.orgToken });
    expect(versions.body.data.map((v: any) => [v.version, v.items[0].threshold])).toEqual([
      [2, 80],
      [1, 90],
    ]);
    const rows = await auditRowsOf(t.db.admin, 'policy.update', p.id);
    expect(rows.at(-1)!.details.before.items[0].threshold).toBe(90);
    expect(rows.at(-1)!.details.after.items[0].threshold).toBe(80);
    // An assignment is a policy.update too, and leaves the version as it is.
    await assign(tenant.partnerToken, p.id, { level: 'site', targetId: tenant.siteId });
    expect((await t.api.request('GET', `/api/v1/policies/${p.id}`, { token: tenant.orgToken })).body.version).toBe(2);
    expect((await auditRowsOf(t.db.admin, 'policy.update', p.id)).length).toBe(rows.length + 1);
    const deleted = await t.api.request('DELETE', `/api/v1/policies/${p.id}`, { token: tenant.partnerToken });
    expect(deleted.status).toBe(204);
    expect((await auditRowsOf(t.db.admin, 'policy.delete', p.id)).length).toBe(1);
    expect((await t.api.request('GET', `/api/v1/policies/${p.id}`, { token: tenant.orgToken })).status).toBe(404);
  });

  it("another tenant's policy, assignment, exemption and device are 404; permissions are 403", async () => {
    const p = await policy(tenant.partnerToken, { name: 'Private', orgId: tenant.orgId, items: [cpu()] });
    const a = await assign(tenant.partnerToken, p.id, { level: 'organization', targetId: tenant.orgId });
    for (const [method, path] of [
      ['GET', `/api/v1/policies/${p.id}`],
      ['PATCH', `/api/v1/policies/${p.id}`],
      ['DELETE', `/api/v1/policies/${p.id}`],
      ['GET', `/api/v1/policies/${p.id}/assignments`],
      ['DELETE', `/api/v1/policy-assignments/${a.id}`],
      ['GET', `/api/v1/devices/${device.deviceId}/effective-policies`],
      ['GET', `/api/v1/devices/${device.deviceId}/monitor-states`],
    ] as const) {
      const reply = await t.api.request(method, path, {
        token: other.partnerToken,
        body: method === 'PATCH' ? { name: 'x' } : undefined,
      });
      expect(reply.status, `${method} ${path}`).toBe(404);
    }
    // Assigning to another tenant's device reads like an unknown one.
    await assign(tenant.partnerToken, p.id, { level: 'device', targetId: otherDevice.deviceId }, 404);
    // A viewer reads but does not write; an organization admin does not change the partner's library.
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', `/api/v1/policies/${p.id}`, { token: viewer })).status).toBe(200);
    expect(
      (await t.api.request('PATCH', `/api/v1/policies/${p.id}`, { token: viewer, body: { name: 'x' } })).status,
    ).toBe(403);
    const library = await policy(tenant.partnerToken, { name: 'Library', availability: 'partner', items: [] });
    expect(
      (await t.api.request('PATCH', `/api/v1/policies/${library.id}`, { token: tenant.orgToken, body: { name: 'x' } }))
        .status,
    ).toBe(403);
    // A technician does not write policies.
    const technician = await partnerUser(tenant.partnerId, 'partner_technician');
    expect(
      (
        await t.api.request('POST', '/api/v1/policies', {
          token: technician,
          body: { kind: 'monitoring', name: 'T', orgId: tenant.orgId },
        })
      ).status,
    ).toBe(403);
    // An organization's policy is assigned within its organization only.
    const wrong = await t.api.request('POST', `/api/v1/policies/${p.id}/assignments`, {
      token: tenant.partnerToken,
      body: { level: 'organization', targetId: secondOrg.id },
    });
    expect(wrong.status).toBe(400);
    expect(JSON.stringify(wrong.body)).toContain('targetId');
    // The same target twice is a conflict.
    await assign(tenant.partnerToken, p.id, { level: 'organization', targetId: tenant.orgId }, 409);
    await t.api.request('DELETE', `/api/v1/policies/${p.id}`, { token: tenant.partnerToken });
    await t.api.request('DELETE', `/api/v1/policies/${library.id}`, { token: tenant.partnerToken });
  });
});

describe('the effective policies of a device', () => {
  it('takes each key from the closest level, says where it came from, and follows changes', async () => {
    const partnerP = await policy(tenant.partnerToken, {
      name: 'P',
      availability: 'partner',
      items: [cpu('cpu', 95), cpu('cpu-partner-only', 99)],
    });
    await assign(tenant.partnerToken, partnerP.id, { level: 'partner', targetId: tenant.partnerId });
    expect(await origins()).toEqual({ cpu: ['partner', 95], 'cpu-partner-only': ['partner', 99] });

    const orgP = await policy(tenant.partnerToken, { name: 'O', orgId: tenant.orgId, items: [cpu('cpu', 90)] });
    const orgA = await assign(tenant.partnerToken, orgP.id, { level: 'organization', targetId: tenant.orgId });
    expect((await origins()).cpu).toEqual(['organization', 90]);

    const siteP = await policy(tenant.partnerToken, { name: 'S', orgId: tenant.orgId, items: [cpu('cpu', 85)] });
    await assign(tenant.partnerToken, siteP.id, { level: 'site', targetId: tenant.siteId });
    expect((await origins()).cpu).toEqual(['site', 85]);

    // A static group holding the device.
    const group = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: { name: 'Pilot', type: 'static' },
    });
    const groupP = await policy(tenant.partnerToken, { name: 'G', orgId: tenant.orgId, items: [cpu('cpu', 80)] });
    await assign(tenant.partnerToken, groupP.id, { level: 'group', targetId: group.body.id });
    expect((await origins()).cpu).toEqual(['site', 85]);
    await t.api.request('POST', `/api/v1/device-groups/${group.body.id}/members`, {
      token: tenant.orgToken,
      body: { deviceIds: [device.deviceId] },
    });
    expect((await origins()).cpu).toEqual(['group', 80]);

    // The device's own assignment, narrowed to servers: the device reports no role yet.
    const deviceP = await policy(tenant.partnerToken, { name: 'D', orgId: tenant.orgId, items: [cpu('cpu', 75)] });
    await assign(tenant.partnerToken, deviceP.id, { level: 'device', targetId: device.deviceId, roles: ['server'] });
    expect((await origins()).cpu).toEqual(['group', 80]);
    const hb = await t.api.request('POST', `/api/v1/agents/${device.agentId}/heartbeat`, {
      token: device.token,
      body: { role: 'server' },
    });
    expect(hb.status).toBe(200);
    const now = await effective();
    expect(now.items.find((i) => i.key === 'cpu')).toMatchObject({
      origin: { level: 'device', policyId: deviceP.id, policyVersion: 1 },
    });
    expect(now.items.find((i) => i.key === 'cpu')!.overridden.map((o: any) => o.level)).toEqual([
      'group',
      'site',
      'organization',
      'partner',
    ]);
    expect(hb.body.configVersion).toBe(now.configVersion);

    // An exemption of the device's own item lets the group's apply; at the site, the organization's block.
    const exemption = await t.api.request('POST', `/api/v1/policies/${deviceP.id}/exemptions`, {
      token: tenant.partnerToken,
      body: { itemKey: 'cpu', level: 'device', targetId: device.deviceId, reason: 'Build server runs hot' },
    });
    expect(exemption.status).toBe(201);
    const exempted = await effective();
    expect(exempted.items.find((i) => i.key === 'cpu')!.origin.level).toBe('group');
    expect(exempted.exempted).toMatchObject([{ key: 'cpu', exemption: { reason: 'Build server runs hot' } }]);
    expect(
      (
        await t.api.request('POST', `/api/v1/policies/${deviceP.id}/exemptions`, {
          token: tenant.partnerToken,
          body: { itemKey: 'nope', level: 'device', targetId: device.deviceId, reason: 'x' },
        })
      ).status,
    ).toBe(400);

    // Block inheritance at the organization: the partner's assignment stops there.
    const block = await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/policy-inheritance`, {
      token: tenant.partnerToken,
      body: { block: true },
    });
    expect(block.status).toBe(200);
    const blocked = await effective();
    expect(blocked.items.map((i) => i.key)).toEqual(['cpu']);
    expect(blocked.blocked.map((b: any) => b.level)).toEqual(['partner']);
    // Organization users cannot block the partner's policies out.
    expect(
      (
        await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/policy-inheritance`, {
          token: tenant.orgToken,
          body: { block: false },
        })
      ).status,
    ).toBe(403);
    await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/sites/${tenant.siteId}/policy-inheritance`, {
      token: tenant.partnerToken,
      body: { block: true },
    });
    expect((await effective()).blocked.map((b: any) => b.level).sort()).toEqual(['organization', 'partner']);
    const inheritanceRows = await t.db.admin.query(
      `SELECT details FROM audit_logs WHERE action = 'policy.update' AND details ? 'inheritance' AND org_id = :orgId::uuid`,
      { orgId: tenant.orgId },
    );
    expect(inheritanceRows.rows.length).toBe(2);
    for (const path of [
      `/api/v1/orgs/organizations/${tenant.orgId}/policy-inheritance`,
      `/api/v1/orgs/organizations/${tenant.orgId}/sites/${tenant.siteId}/policy-inheritance`,
    ])
      await t.api.request('PUT', path, { token: tenant.partnerToken, body: { block: false } });

    // A new device gets what its site and organization have, at once.
    const fresh = await enrollDevice(t.api, tenant, 'WS-NEW');
    expect(await origins(fresh.deviceId)).toEqual({ cpu: ['site', 85], 'cpu-partner-only': ['partner', 99] });

    // A dynamic group follows its filter: a new device whose hostname matches is in it.
    const dynamic = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: { name: 'Kiosks', type: 'dynamic', filter: { field: 'hostname', op: 'startsWith', value: 'KIOSK' } },
    });
    expect(dynamic.status, JSON.stringify(dynamic.body)).toBe(201);
    const kioskP = await policy(tenant.partnerToken, { name: 'K', orgId: tenant.orgId, items: [cpu('cpu', 60)] });
    await assign(tenant.partnerToken, kioskP.id, { level: 'group', targetId: dynamic.body.id, osTypes: ['windows'] });
    const kiosk = await enrollDevice(t.api, tenant, 'KIOSK-7');
    // Narrowed to Windows, and the enrolled device reported no OS type.
    expect((await origins(kiosk.deviceId)).cpu).toEqual(['site', 85]);
    await t.db.admin.query(`UPDATE devices SET os_type = 'Windows' WHERE id = :id::uuid`, { id: kiosk.deviceId });
    expect((await origins(kiosk.deviceId)).cpu).toEqual(['group', 60]);

    // Removing an assignment: the next one takes over.
    await t.api.request('DELETE', `/api/v1/policy-assignments/${orgA.id}`, { token: tenant.partnerToken });
    expect((await effective()).items.find((i) => i.key === 'cpu')!.overridden.map((o: any) => o.level)).not.toContain(
      'organization',
    );

    // Resolved for many devices at once (a partner automation's occurrence), each device gets what it gets alone.
    const { rows } = await t.db.admin.query<{ id: string }>(
      'SELECT id FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL',
      { orgId: tenant.orgId },
    );
    const ids = rows.map((row) => row.id);
    expect(ids).toEqual(expect.arrayContaining([device.deviceId, kiosk.deviceId]));
    const together = await effectivePoliciesOfDevices(t.db.admin, ids, 'monitoring');
    expect([...together.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(together.get(id)).toEqual(await effectivePoliciesOf(t.db.admin, id, 'monitoring'));
  });
});
