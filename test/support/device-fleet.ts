import { expect } from 'vitest';
import type { Db } from '#shared/db/db.ts';
import type { Api } from './api.ts';
import { createTenant, type Tenant } from './tenants.ts';

/** One enrolled device of the fleet. */
export interface FleetDevice {
  agentId: string;
  deviceId: string;
  token: string;
}

/**
 * An organization's small fleet as the devices list and a device's page show it, built through the API as users and
 * agents would: three devices on two sites (one online, one seen 10 minutes ago, one two days ago), a static and a
 * dynamic group, two custom fields (one with a default), a partner-wide monitoring policy overridden for the servers
 * by an organization's policy assigned to their group, a device exemption, and CPU samples that make SRV-01's item
 * fire (one open alert). Another tenant has a device of its own.
 */
export interface Fleet {
  tenant: Tenant;
  other: Tenant;
  branchSiteId: string;
  devices: Record<'SRV-01' | 'SRV-02' | 'WS-01', FleetDevice>;
  otherDevice: FleetDevice;
  serversGroupId: string;
  windowsGroupId: string;
  baselineId: string;
  serverWatchId: string;
  /** The CPU samples sent by SRV-01, oldest first. */
  cpuSamples: { value: number; timestamp: string }[];
}

const ok = async (reply: Promise<{ status: number; body: any }>, status = 201) => {
  const answer = await reply;
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  return answer.body;
};

async function enroll(
  api: Api,
  tenant: Tenant,
  hostname: string,
  facts: { osType: string; osVersion: string; role: 'server' | 'workstation'; siteId?: string },
): Promise<FleetDevice> {
  const key = await ok(
    api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
      body: facts.siteId ? { siteId: facts.siteId } : {},
    }),
  );
  const { siteId: _, ...reported } = facts;
  return ok(
    api.request('POST', '/api/v1/agents/enroll', {
      body: { enrollmentKey: key.key, hostname, agentVersion: '2.4.1', ...reported },
    }),
  );
}

export async function seedDeviceFleet(api: Api, admin: Db, name = 'Fleetco'): Promise<Fleet> {
  const tenant = await createTenant(api, name);
  const other = await createTenant(api, `${name} Rival`);
  const branch = await ok(
    api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Branch office' },
    }),
  );
  const devices = {
    'SRV-01': await enroll(api, tenant, 'SRV-01', { osType: 'windows', osVersion: 'Server 2022', role: 'server' }),
    'SRV-02': await enroll(api, tenant, 'SRV-02', {
      osType: 'linux',
      osVersion: 'Ubuntu 24.04',
      role: 'server',
      siteId: branch.id,
    }),
    'WS-01': await enroll(api, tenant, 'WS-01', { osType: 'windows', osVersion: '11', role: 'workstation' }),
  };
  const otherDevice = await enroll(api, other, 'RIVAL-01', { osType: 'windows', osVersion: '11', role: 'server' });
  for (const device of [devices['SRV-01'], devices['SRV-02']])
    await ok(api.request('POST', `/api/v1/agents/${device.agentId}/heartbeat`, { token: device.token, body: {} }), 200);
  // SRV-02 was last seen ten minutes ago, WS-01 two days ago: outside the online window.
  for (const [device, ago] of [
    ['SRV-02', '10 minutes'],
    ['WS-01', '2 days'],
  ] as const)
    await admin.query(`UPDATE devices SET last_seen_at = now() - :ago::interval WHERE id = :id::uuid`, {
      id: devices[device].deviceId,
      ago,
    });

  for (const body of [
    { name: 'Asset tag', key: 'asset_tag', type: 'text' },
    { name: 'Rack', key: 'rack', type: 'text', orgId: tenant.orgId, defaultValue: 'R1' },
  ])
    await ok(api.request('POST', '/api/v1/custom-fields', { token: tenant.partnerToken, body }));
  for (const [device, value] of [
    ['SRV-01', 'A-100'],
    ['WS-01', 'A-200'],
  ] as const)
    await ok(
      api.request('PUT', `/api/v1/devices/${devices[device].deviceId}/custom-fields/asset_tag`, {
        token: tenant.orgToken,
        body: { value },
      }),
      200,
    );

  const groups = `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`;
  const servers = await ok(
    api.request('POST', groups, { token: tenant.orgToken, body: { name: 'Servers', type: 'static' } }),
  );
  await ok(
    api.request('POST', `/api/v1/device-groups/${servers.id}/members`, {
      token: tenant.orgToken,
      body: { deviceIds: [devices['SRV-01'].deviceId, devices['SRV-02'].deviceId] },
    }),
    200,
  );
  const windows = await ok(
    api.request('POST', groups, {
      token: tenant.orgToken,
      body: { name: 'Windows', type: 'dynamic', filter: { field: 'osType', op: 'equals', value: 'windows' } },
    }),
  );

  const metric = (key: string, metricName: string, threshold: number, clearThreshold: number) => ({
    key,
    type: 'metric',
    severity: 'high',
    metric: metricName,
    op: 'gt',
    threshold,
    clearThreshold,
    windowSeconds: 60,
    aggregation: 'last',
    pendingSeconds: 0,
  });
  const baseline = await ok(
    api.request('POST', '/api/v1/policies', {
      token: tenant.partnerToken,
      body: {
        kind: 'monitoring',
        name: 'Baseline',
        availability: 'partner',
        items: [
          metric('cpu', 'cpu.percent', 90, 80),
          metric('memory', 'memory.percent', 95, 85),
          { key: 'offline', type: 'offline', severity: 'medium', minutes: 15 },
        ],
      },
    }),
  );
  await ok(
    api.request('POST', `/api/v1/policies/${baseline.id}/assignments`, {
      token: tenant.partnerToken,
      body: { level: 'partner', targetId: tenant.partnerId },
    }),
  );
  const serverWatch = await ok(
    api.request('POST', '/api/v1/policies', {
      token: tenant.orgToken,
      body: {
        kind: 'monitoring',
        name: 'Server watch',
        orgId: tenant.orgId,
        items: [{ ...metric('cpu', 'cpu.percent', 75, 60), severity: 'critical' }],
      },
    }),
  );
  await ok(
    api.request('POST', `/api/v1/policies/${serverWatch.id}/assignments`, {
      token: tenant.orgToken,
      body: { level: 'group', targetId: servers.id },
    }),
  );
  await ok(
    api.request('POST', `/api/v1/policies/${baseline.id}/exemptions`, {
      token: tenant.partnerToken,
      body: { itemKey: 'memory', level: 'device', targetId: devices['WS-01'].deviceId, reason: 'Kiosk' },
    }),
  );

  // SRV-01's CPU: calm, then above the servers' threshold of 75 on the last sample: the item fires.
  const now = Date.now();
  const values = [22, 35, 41, 30, 28, 55, 62, 48, 97];
  const cpuSamples = values.map((value, index) => ({
    value,
    timestamp: new Date(now - (values.length - index) * 60_000).toISOString(),
  }));
  const upload = await ok(
    api.request('PUT', `/api/v1/agents/${devices['SRV-01'].agentId}/metrics`, {
      token: devices['SRV-01'].token,
      body: { samples: cpuSamples.map((s) => ({ metric: 'cpu.percent', ...s })) },
    }),
    200,
  );
  expect(upload.transitions).toContainEqual({ itemKey: 'cpu', from: 'ok', to: 'firing' });
  return {
    tenant,
    other,
    branchSiteId: branch.id,
    devices,
    otherDevice,
    serversGroupId: servers.id,
    windowsGroupId: windows.id,
    baselineId: baseline.id,
    serverWatchId: serverWatch.id,
    cpuSamples,
  };
}
