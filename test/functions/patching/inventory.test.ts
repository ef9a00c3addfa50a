import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let device: { agentId: string; deviceId: string; token: string };
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Initech');
  other = await createTenant(t.api, 'Umbrella');
  device = await enrollDevice(t.api, tenant, 'inv-host');
});

const item = (externalId: string, extra: Record<string, unknown> = {}) => ({
  externalId,
  title: `Update ${externalId}`,
  requiresReboot: false,
  state: 'missing',
  ...extra,
});
const upload = (body: unknown, agent = device, agentId = agent.agentId) =>
  t.api.request('PUT', `/api/v1/agents/${agentId}/patch-inventory`, { token: agent.token, body });
const scan = (scanId: string, scannedAt: string, items: unknown[], source = 'windows-update') => ({
  scanId,
  scannedAt,
  source,
  items,
});
const count = async (sql: string) => Number((await t.db.admin.query(sql)).rows[0]!.n);

describe('patch inventory', () => {
  it('keeps a partner catalogue with normalised categories and replaces the device state with each complete scan', async () => {
    const first = await upload(
      scan('s1', '2026-11-20T10:00:00Z', [
        item('KB5001', { kb: 'KB5001', category: 'Security Updates', severity: 'Critical', state: 'missing' }),
        item('KB5002', { category: 'Definition Updates', severity: 'Low', state: 'installed' }),
        item('KB5003', { category: 'Drivers', state: 'failed' }),
        ...Array.from({ length: 40 }, (_, i) => item(`OLD${i}`, { state: 'installed' })),
      ]),
    );
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ applied: true, items: 43, removed: 0 });
    const listed = await t.api.request('GET', '/api/v1/patches?limit=500', { token: tenant.orgToken });
    expect(listed.status).toBe(200);
    const byId = new Map(listed.body.data.map((p: any) => [p.externalId, p]));
    expect(byId.get('KB5001')).toMatchObject({
      category: 'security',
      severity: 'critical',
      vendorCategory: 'Security Updates',
    });
    expect(byId.get('KB5002')).toMatchObject({ category: 'definition', severity: 'low' });
    expect(byId.get('KB5003')).toMatchObject({ category: 'driver', severity: 'unspecified' });
    expect((byId.get('KB5001') as any).counts).toEqual({ missing: 1, installed: 0, failed: 0, pendingReboot: 0 });

    // The next complete scan lists two patches: what it no longer lists is gone, never outstanding.
    const second = await upload(
      scan('s2', '2026-11-21T10:00:00Z', [
        item('KB5001', { state: 'installed' }),
        item('KB5004', { category: 'Feature Packs' }),
      ]),
    );
    expect(second.body).toMatchObject({ applied: true, items: 2, removed: 42 });
    expect(await count(`SELECT count(*) AS n FROM device_patches WHERE device_id = '${device.deviceId}'`)).toBe(2);
    const mine = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/patches`, { token: tenant.orgToken });
    expect(mine.status).toBe(200);
    expect(mine.body.scannedAt).toBe('2026-11-21T10:00:00.000Z');
    expect(mine.body.data.map((p: any) => [p.externalId, p.state]).sort()).toEqual([
      ['KB5001', 'installed'],
      ['KB5004', 'missing'],
    ]);
    const missing = await t.api.request('GET', '/api/v1/patches?state=missing', { token: tenant.orgToken });
    expect(missing.body.data.map((p: any) => p.externalId)).toEqual(['KB5004']);
    // The category kept from the first scan when a later one names none.
    const kb1 = await t.api.request('GET', `/api/v1/patches/${(byId.get('KB5001') as any).id}`, {
      token: tenant.orgToken,
    });
    expect(kb1.body).toMatchObject({ category: 'security', counts: { installed: 1, missing: 0 }, decisions: [] });

    // An older scan changes nothing; another source is its own snapshot.
    const late = await upload(scan('s0', '2026-11-19T10:00:00Z', [item('KB9999')]));
    expect(late.body).toMatchObject({ applied: false });
    const apt = await upload(scan('a1', '2026-11-21T11:00:00Z', [item('openssl', { category: 'security' })], 'apt'));
    expect(apt.body).toMatchObject({ applied: true, removed: 0 });
    expect(await count(`SELECT count(*) AS n FROM device_patches WHERE device_id = '${device.deviceId}'`)).toBe(3);
  });

  it('refuses bad input naming the field and stores nothing; another agent id is refused', async () => {
    const before = await count('SELECT count(*) AS n FROM patches');
    for (const [body, path] of [
      [scan('x', '2026-11-22T10:00:00Z', [item('A', { state: 'lost' })]), 'body.items.0.state'],
      [{ ...scan('x', '2026-11-22T10:00:00Z', []), source: 'chocolatey' }, 'body.source'],
      [scan('x', '2026-11-22T10:00:00Z', [item('A'), item('A')]), 'body.items.1.externalId'],
      [scan('x', 'yesterday', []), 'body.scannedAt'],
    ] as const) {
      const reply = await upload(body);
      expect(reply.status, path).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    expect(await count('SELECT count(*) AS n FROM patches')).toBe(before);
    const foreign = await enrollDevice(t.api, other, 'foreign');
    expect((await upload(scan('y', '2026-11-22T10:00:00Z', []), device, foreign.agentId)).status).toBe(403);
  });

  it('approves, declines and defers with audit rows, in bulk too; another tenant sees none of it', async () => {
    const listed = await t.api.request('GET', '/api/v1/patches?limit=500', { token: tenant.partnerToken });
    const id = (externalId: string) => listed.body.data.find((p: any) => p.externalId === externalId).id as string;
    const approve = await t.api.request('POST', `/api/v1/patches/${id('KB5004')}/approve`, {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId },
    });
    expect(approve.status).toBe(200);
    expect(approve.body).toMatchObject({ decision: 'approved', orgId: tenant.orgId, ringId: null });
    expect(await auditRowsOf(t.db.admin, 'patch.approve', id('KB5004'))).toHaveLength(1);
    // An organization's user decides for its organization only.
    const partnerWide = await t.api.request('POST', `/api/v1/patches/${id('KB5004')}/decline`, {
      token: tenant.orgToken,
      body: {},
    });
    expect(partnerWide.status).toBe(403);
    const declined = await t.api.request('POST', `/api/v1/patches/${id('KB5004')}/decline`, {
      token: tenant.partnerToken,
      body: {},
    });
    expect(declined.body).toMatchObject({ decision: 'declined', orgId: null });
    expect(await auditRowsOf(t.db.admin, 'patch.decline', id('KB5004'))).toHaveLength(1);
    const noUntil = await t.api.request('POST', `/api/v1/patches/${id('KB5001')}/defer`, {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId },
    });
    expect(noUntil.status).toBe(400);
    expect(noUntil.body.error.details[0].path).toBe('body.until');
    const until = new Date(Date.now() + 5 * 86_400_000).toISOString();
    const deferred = await t.api.request('POST', `/api/v1/patches/${id('KB5001')}/defer`, {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, until },
    });
    expect(deferred.body).toMatchObject({ decision: 'deferred', until });
    const detail = await t.api.request('GET', `/api/v1/patches/${id('KB5004')}`, { token: tenant.orgToken });
    expect(detail.body.decisions.map((d: any) => d.decision).sort()).toEqual(['approved', 'declined']);
    const device2 = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/patches`, {
      token: tenant.orgToken,
    });
    const approval = Object.fromEntries(device2.body.data.map((p: any) => [p.externalId, p.approval]));
    // The organization's approval is more specific than the partner's decline.
    expect(approval).toMatchObject({ KB5004: 'approved', KB5001: 'deferred', openssl: 'not-approved' });

    const bulk = await t.api.request('POST', '/api/v1/patches/bulk/approve', {
      token: tenant.orgToken,
      body: { patchIds: [id('KB5001'), id('openssl')], orgId: tenant.orgId },
    });
    expect(bulk.status).toBe(200);
    expect(bulk.body.approved).toBe(2);
    expect(await auditRowsOf(t.db.admin, 'patch.approve', id('openssl'))).toHaveLength(1);

    // Another tenant: 404 for the patch, nothing in its catalogue, its organization unreachable.
    const otherOrg = await orgUser(other.partnerId, other.orgId);
    expect((await t.api.request('GET', `/api/v1/patches/${id('KB5001')}`, { token: otherOrg })).status).toBe(404);
    expect((await t.api.request('GET', '/api/v1/patches', { token: other.partnerToken })).body.data).toEqual([]);
    const foreignApprove = await t.api.request('POST', `/api/v1/patches/${id('KB5001')}/approve`, {
      token: other.partnerToken,
      body: {},
    });
    expect(foreignApprove.status).toBe(404);
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', '/api/v1/patches', { token: viewer })).status).toBe(403);
  });
});
