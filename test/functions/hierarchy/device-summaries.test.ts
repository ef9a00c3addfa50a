import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { type Fleet, seedDeviceFleet } from '#test/support/device-fleet.ts';
import { orgUser } from '#test/support/tenants.ts';

const t = useApi();
let fleet: Fleet;
const summaries = (orgId: string, deviceIds: unknown, token = fleet.tenant.orgToken) =>
  t.api.request('POST', `/api/v1/orgs/organizations/${orgId}/device-summaries`, { token, body: { deviceIds } });

beforeAll(async () => {
  fleet = await seedDeviceFleet(t.api, t.db.admin);
});

describe('POST /orgs/organizations/{id}/device-summaries', () => {
  it("answers each device's open alerts, static and dynamic groups and custom fields, in the order asked", async () => {
    const { devices } = fleet;
    const reply = await summaries(fleet.tenant.orgId, [
      devices['WS-01'].deviceId,
      devices['SRV-01'].deviceId,
      devices['SRV-02'].deviceId,
    ]);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const group = (name: string, type: string, id: string) => ({ id, name, type });
    const servers = group('Servers', 'static', fleet.serversGroupId);
    const windows = group('Windows', 'dynamic', fleet.windowsGroupId);
    expect(reply.body.data).toEqual([
      {
        deviceId: devices['WS-01'].deviceId,
        openAlerts: 0,
        groups: [windows],
        customFields: { asset_tag: 'A-200', rack: 'R1' },
      },
      {
        deviceId: devices['SRV-01'].deviceId,
        openAlerts: 1,
        groups: [servers, windows],
        customFields: { asset_tag: 'A-100', rack: 'R1' },
      },
      { deviceId: devices['SRV-02'].deviceId, openAlerts: 0, groups: [servers], customFields: { rack: 'R1' } },
    ]);
    // The same as the one-device routes answer.
    for (const { deviceId, groups, customFields, openAlerts } of reply.body.data) {
      const token = fleet.tenant.orgToken;
      const one = await t.api.request('GET', `/api/v1/devices/${deviceId}`, { token });
      expect(one.body.customFields).toEqual(customFields);
      const ofDevice = await t.api.request('GET', `/api/v1/devices/${deviceId}/groups`, { token });
      expect(ofDevice.body.data.map((g: { id: string }) => g.id)).toEqual(groups.map((g: { id: string }) => g.id));
      const open = await t.api.request('GET', `/api/v1/alerts?deviceId=${deviceId}&status=open`, { token });
      expect(open.body.data).toHaveLength(openAlerts);
    }
  });

  it("leaves out another tenant's device and ids of no device; another tenant's organization is 404", async () => {
    const reply = await summaries(fleet.tenant.orgId, [
      fleet.otherDevice.deviceId,
      randomUUID(),
      fleet.devices['SRV-02'].deviceId,
    ]);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((s: { deviceId: string }) => s.deviceId)).toEqual([fleet.devices['SRV-02'].deviceId]);
    const foreign = await summaries(fleet.other.orgId, [fleet.otherDevice.deviceId]);
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).not.toContain(fleet.other.orgId);
  });

  it('refuses bad ids with a 400 naming the field, and shows no alert count without alerts:read', async () => {
    for (const deviceIds of [[], ['not-a-uuid'], Array.from({ length: 101 }, () => randomUUID())]) {
      const reply = await summaries(fleet.tenant.orgId, deviceIds);
      expect(reply.status).toBe(400);
      expect(JSON.stringify(reply.body)).toContain('deviceIds');
    }
    const reader = await orgUser(fleet.tenant.partnerId, fleet.tenant.orgId, 'org_admin', {
      permissions: ['orgs:read', 'devices:read'],
    });
    const reply = await summaries(fleet.tenant.orgId, [fleet.devices['SRV-01'].deviceId], reader);
    expect(reply.status).toBe(200);
    expect(reply.body.data[0].openAlerts).toBeNull();
    const none = await orgUser(fleet.tenant.partnerId, fleet.tenant.orgId, 'org_admin', { permissions: ['orgs:read'] });
    expect((await summaries(fleet.tenant.orgId, [fleet.devices['SRV-01'].deviceId], none)).status).toBe(403);
  });
});
