import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
type Enrolled = { agentId: string; deviceId: string; token: string };
let devices: Enrolled[];
let patchIds: Record<string, string>;

const catalogue: Record<string, { severity: string; category: string }> = {
  SEC1: { severity: 'Critical', category: 'Security Updates' },
  SEC2: { severity: 'Important', category: 'Security Updates' },
  FEAT1: { severity: 'Moderate', category: 'Feature Packs' },
  DRV1: { severity: 'Low', category: 'Drivers' },
};
const upload = (device: Enrolled, scannedAt: string, states: Record<string, string>, source = 'windows-update') =>
  t.api.request('PUT', `/api/v1/agents/${device.agentId}/patch-inventory`, {
    token: device.token,
    body: {
      scanId: `scan-${scannedAt}`,
      scannedAt,
      source,
      items: Object.entries(states).map(([externalId, state]) => ({
        externalId,
        title: `Update ${externalId}`,
        ...catalogue[externalId],
        requiresReboot: false,
        state,
      })),
    },
  });
const post = (path: string, body?: unknown) => t.api.request('POST', path, { token: tenant.orgToken, body });
const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000).toISOString();

/** The organization's kept missing counts, and the same recounted from the device patches of its live devices. */
async function keptAndRecounted() {
  const params = { orgId: tenant.orgId };
  const kept = await t.db.admin.query(
    `SELECT patch_id::text AS "patchId", devices FROM patch_missing_counts WHERE org_id = :orgId::uuid ORDER BY 1`,
    params,
  );
  const recounted = await t.db.admin.query(
    `SELECT dp.patch_id::text AS "patchId", count(*)::int AS devices
       FROM device_patches dp JOIN devices d ON d.id = dp.device_id AND d.deleted_at IS NULL
      WHERE dp.org_id = :orgId::uuid AND dp.state = 'missing' GROUP BY 1 ORDER BY 1`,
    params,
  );
  return { kept: kept.rows, recounted: recounted.rows };
}

const pairKey = {
  failed: 'failed',
  'pending-reboot': 'pendingReboot',
  installed: 'installed',
} as const;
const worstFirst = ['failed', 'missingApproved', 'pendingReboot', 'missingNotApproved', 'installed'] as const;

/**
 * The organization's device and pair counts recounted device by device from each device's patches as
 * GET /devices/{id}/patches lists them, with the approval it shows (decided in the process, not by the report's
 * statement).
 */
async function recountThroughDevices(live: Enrolled[]) {
  const pairs = { failed: 0, missingApproved: 0, pendingReboot: 0, missingNotApproved: 0, installed: 0 };
  const byState = { ...pairs, stale: 0 };
  for (const device of live) {
    const reply = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/patches`, { token: tenant.orgToken });
    expect(reply.status).toBe(200);
    if (reply.body.scannedAt === null) {
      byState.stale += 1;
      continue;
    }
    const own = { failed: 0, missingApproved: 0, pendingReboot: 0, missingNotApproved: 0, installed: 0 };
    for (const patch of reply.body.data) {
      const key =
        patch.state === 'missing'
          ? patch.approval === 'approved'
            ? 'missingApproved'
            : 'missingNotApproved'
          : pairKey[patch.state as keyof typeof pairKey];
      own[key] += 1;
      pairs[key] += 1;
    }
    byState[worstFirst.find((k) => own[k] > 0 && k !== 'installed') ?? 'installed'] += 1;
  }
  return { devices: byState, pairs };
}

async function expectExact(live: Enrolled[]) {
  const { kept, recounted } = await keptAndRecounted();
  expect(kept).toEqual(recounted);
  const report = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance`, {
    token: tenant.orgToken,
  });
  expect(report.status).toBe(200);
  const expected = await recountThroughDevices(live);
  expect({ devices: report.body.devices, pairs: report.body.pairs }).toEqual(expected);
  const partner = await t.api.request('GET', `/api/v1/partners/${tenant.partnerId}/patch-compliance`, {
    token: tenant.partnerToken,
  });
  expect(partner.status).toBe(200);
  const own = partner.body.organizations.find((o: any) => o.orgId === tenant.orgId);
  expect({ devices: own.devices, pairs: own.pairs }).toEqual(expected);
  return { kept, report: report.body };
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Wernham Hogg');
  devices = [];
  for (const name of ['count-a', 'count-b', 'count-c', 'count-d'])
    devices.push(await enrollDevice(t.api, tenant, name));
  const created = await post('/api/v1/policies', {
    kind: 'patching',
    name: 'Counted',
    orgId: tenant.orgId,
    items: [
      { key: 'security', type: 'approval-rule', categories: ['Security Updates'] },
      {
        key: 'all',
        type: 'ring',
        order: 0,
        groupIds: [],
        deferralDays: 0,
        deadlineDays: 7,
        windowMinutes: 120,
        rebootPolicy: 'if-required',
        promotion: { minDevices: 1, minSuccessPercent: 100, soakHours: 0 },
      },
    ],
  });
  expect(created.status).toBe(201);
  const assigned = await post(`/api/v1/policies/${created.body.id}/assignments`, {
    level: 'organization',
    targetId: tenant.orgId,
  });
  expect(assigned.status).toBe(201);
});

describe('the counts the compliance report keeps', () => {
  it('equal a recount after uploads, approvals, declines, deferrals and the removal of a device', async () => {
    const [a, b, c, d] = devices as [Enrolled, Enrolled, Enrolled, Enrolled];
    expect((await upload(a, minutesAgo(30), { SEC1: 'missing', FEAT1: 'missing', DRV1: 'installed' })).status).toBe(
      200,
    );
    await upload(b, minutesAgo(30), { SEC1: 'missing', SEC2: 'failed', FEAT1: 'installed' });
    await upload(c, minutesAgo(30), { FEAT1: 'missing', DRV1: 'pending-reboot' });
    await upload(c, minutesAgo(30), { SEC2: 'missing' }, 'third-party');
    const listed = await t.api.request('GET', '/api/v1/patches?limit=100', { token: tenant.orgToken });
    patchIds = Object.fromEntries(listed.body.data.map((p: any) => [`${p.source}:${p.externalId}`, p.id]));
    const first = await expectExact([a, b, c, d]);
    expect(first.kept.map((r: any) => r.devices).sort()).toEqual([1, 2, 2]);
    expect(first.report.devices).toMatchObject({ missingApproved: 2, failed: 1, stale: 1 });

    // A complete scan replaces the device's state: what it no longer lists leaves the counts.
    await upload(a, minutesAgo(20), { SEC1: 'installed', SEC2: 'missing' });
    await upload(b, minutesAgo(20), { SEC1: 'missing', SEC2: 'missing', DRV1: 'missing' });
    // An older scan changes nothing.
    await upload(b, minutesAgo(40), { SEC1: 'installed' });
    await expectExact([a, b, c, d]);

    // Decisions: the feature pack approved, a security patch declined, the other deferred, for the organization.
    const feature = patchIds['windows-update:FEAT1']!;
    const sec1 = patchIds['windows-update:SEC1']!;
    const sec2 = patchIds['windows-update:SEC2']!;
    expect((await post(`/api/v1/patches/${feature}/approve`, { orgId: tenant.orgId })).status).toBe(200);
    await expectExact([a, b, c, d]);
    expect((await post(`/api/v1/patches/${sec1}/decline`, { orgId: tenant.orgId })).status).toBe(200);
    await expectExact([a, b, c, d]);
    const until = new Date(Date.now() + 7 * 86_400_000).toISOString();
    expect((await post(`/api/v1/patches/${sec2}/defer`, { orgId: tenant.orgId, until })).status).toBe(200);
    const deferred = await expectExact([a, b, c, d]);
    expect(deferred.report.pairs.missingApproved).toBe(2);

    // A device removed leaves the counts and the report.
    const removed = await t.api.request('DELETE', `/api/v1/devices/${b.deviceId}`, { token: tenant.orgToken });
    expect(removed.status).toBe(204);
    const after = await expectExact([a, c, d]);
    expect(after.kept.find((r: any) => r.patchId === patchIds['windows-update:DRV1'])).toBeUndefined();

    // The device rows come a page at a time; the counts always cover every device.
    const paged = await t.api.request(
      'GET',
      `/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance?limit=2&page=2`,
      { token: tenant.orgToken },
    );
    expect(paged.status).toBe(200);
    expect(paged.body.pagination).toEqual({ page: 2, limit: 2, total: 3, totalPages: 2 });
    expect(paged.body.deviceStates.map((s: any) => s.hostname)).toEqual(['count-d']);
    expect(paged.body.devices).toEqual(after.report.devices);
    const csv = await fetch(`${t.api.url}/api/v1/orgs/organizations/${tenant.orgId}/patch-compliance?format=csv`, {
      headers: { authorization: `Bearer ${tenant.orgToken}` },
    });
    expect((await csv.text()).trim().split('\n')).toHaveLength(4);
  });
});
