import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raiseScriptAlert } from '#shared/alerts/raise.ts';
import type { Severity } from '#shared/alerts/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { endOccurrence, startOccurrence } from '#shared/maintenance/lifecycle.ts';
import { notifyAfterWindow } from '#shared/notifications/notify.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type ChannelReceivers, startChannelReceivers } from '#test/support/notification-receivers.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let receivers: ChannelReceivers;
let device: { deviceId: string };
let bystander: { deviceId: string };
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Hooli');
  other = await createTenant(t.api, 'Pied Piper');
  receivers = await startChannelReceivers();
  device = await enrollDevice(t.api, tenant, 'maint-host');
  bystander = await enrollDevice(t.api, tenant, 'other-host');
  const slack = await t.api.request('POST', '/api/v1/notification-channels', {
    token: tenant.orgToken,
    body: { orgId: tenant.orgId, name: 'NOC', type: 'slack', config: { url: receivers.url('noc') } },
  });
  await t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/notification-defaults`, {
    token: tenant.orgToken,
    body: { channels: { medium: [slack.body.id], critical: [slack.body.id] } },
  });
});
afterAll(() => receivers.close());

async function raise(severity: Severity, deviceId = device.deviceId): Promise<string> {
  const scriptId = randomUUID();
  await raiseScriptAlert(
    appDb(),
    {
      runItemId: randomUUID(),
      runId: randomUUID(),
      orgId: tenant.orgId,
      partnerId: tenant.partnerId,
      deviceId,
      hostname: 'maint-host',
      scriptId,
      scriptName: `Check ${scriptId.slice(0, 6)}`,
      scriptVersion: 1,
      exitCode: 1,
    },
    severity,
  );
  const { rows } = await t.db.admin.query<{ id: string }>('SELECT id FROM alerts WHERE source_key = :key::text', {
    key: `script:${scriptId}`,
  });
  return rows[0]!.id;
}

const told = (alertId: string) => receivers.received('noc').filter((r) => JSON.stringify(r.json).includes(alertId));

async function createWindow(body: Record<string, unknown>) {
  const reply = await t.api.request('POST', '/api/v1/maintenance-windows', {
    token: tenant.orgToken,
    body: {
      orgId: tenant.orgId,
      name: `Window ${randomUUID().slice(0, 6)}`,
      targets: { deviceIds: [device.deviceId] },
      suppress: ['alerts', 'notifications'],
      ...body,
    },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

describe('maintenance windows on the schedule engine', () => {
  it('"every Sunday 02:00 Europe/Berlin" runs at 03:00 local on 2027-03-28', async () => {
    const window = await createWindow({
      schedule: {
        rrule: 'FREQ=WEEKLY;BYDAY=SU',
        start: '2027-01-03T02:00:00',
        timezone: 'Europe/Berlin',
        durationMinutes: 120,
      },
    });
    expect(await auditRowsOf(t.db.admin, 'maintenance.create', window.id)).toHaveLength(1);
    const reply = await t.api.request(
      'GET',
      `/api/v1/maintenance-windows/${window.id}/occurrences?from=2027-03-20T00:00:00Z&to=2027-04-05T00:00:00Z`,
      { token: tenant.orgToken },
    );
    expect(reply.body).toEqual({
      windowId: window.id,
      timezone: 'Europe/Berlin',
      durationMinutes: 120,
      occurrences: [
        { key: '2027-03-21T02:00:00', local: '2027-03-21T02:00:00+01:00', utc: '2027-03-21T01:00:00.000Z' },
        { key: '2027-03-28T02:00:00', local: '2027-03-28T03:00:00+02:00', utc: '2027-03-28T01:00:00.000Z' },
        { key: '2027-04-04T02:00:00', local: '2027-04-04T02:00:00+02:00', utc: '2027-04-04T00:00:00.000Z' },
      ],
    });
  });

  it.each([
    [
      { schedule: { rrule: 'FREQ=SECONDLY', start: '2027-01-03T02:00:00', durationMinutes: 60 } },
      'body.schedule.rrule',
    ],
    [
      { schedule: { start: '2027-01-03T02:00:00', timezone: 'Mars/Base', durationMinutes: 60 } },
      'body.schedule.timezone',
    ],
    [{ schedule: { start: '2027-01-03T02:00:00+01:00', durationMinutes: 60 } }, 'body.schedule.start'],
    [{ schedule: { start: '2027-01-03T02:00:00', durationMinutes: 60 }, targets: {} }, 'body.targets'],
    [{ schedule: { start: '2027-01-03T02:00:00', durationMinutes: 60 }, suppress: ['coffee'] }, 'body.suppress.0'],
  ])('refuses %o naming %s, storing nothing', async (body, path) => {
    const reply = await t.api.request('POST', '/api/v1/maintenance-windows', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        name: 'Bad',
        targets: { deviceIds: [device.deviceId] },
        suppress: ['alerts'],
        ...body,
      },
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body.error.details)).toContain(`"${path}`);
    expect((await t.db.admin.query(`SELECT 1 FROM maintenance_windows WHERE name = 'Bad'`)).rows).toEqual([]);
  });

  it("another tenant's device is an unknown target, and another tenant's window is 404", async () => {
    const foreign = await enrollDevice(t.api, other, 'foreign-host');
    const reply = await t.api.request('POST', '/api/v1/maintenance-windows', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        name: 'Foreign',
        schedule: { start: '2027-01-03T02:00:00', durationMinutes: 60 },
        targets: { deviceIds: [foreign.deviceId] },
        suppress: ['alerts'],
      },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('body.targets.deviceIds');
    const mine = await createWindow({ schedule: { start: '2027-01-03T02:00:00', durationMinutes: 60 } });
    const read = await t.api.request('GET', `/api/v1/maintenance-windows/${mine.id}`, { token: other.orgToken });
    expect(read.status).toBe(404);
    const maintenance = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/maintenance`, {
      token: other.orgToken,
    });
    expect(maintenance.status).toBe(404);
  });
});

describe('suppression and the end of a window', () => {
  it('alerts during a window are recorded as suppressed and told once at its end, unless resolved meanwhile', async () => {
    const window = await createWindow({ schedule: { start: '2027-06-01T00:00:00', durationMinutes: 60 } });
    const started = await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/start`, {
      token: tenant.orgToken,
      body: { minutes: 120 },
    });
    expect(started.status).toBe(200);
    expect(started.body.active).toMatchObject({ manual: true });
    expect(await auditRowsOf(t.db.admin, 'maintenance.start', window.id)).toMatchObject([{ actorType: 'user' }]);
    const inWindow = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/maintenance`, {
      token: tenant.orgToken,
    });
    expect(inWindow.body).toMatchObject({
      inMaintenance: true,
      until: started.body.active.until,
      windows: [{ id: window.id }],
    });
    const outside = await t.api.request('GET', `/api/v1/devices/${bystander.deviceId}/maintenance`, {
      token: tenant.orgToken,
    });
    expect(outside.body).toEqual({ deviceId: bystander.deviceId, inMaintenance: false, until: null, windows: [] });

    const firing = await raise('medium');
    const resolvedMeanwhile = await raise('medium');
    const elsewhere = await raise('medium', bystander.deviceId);
    const alert = await t.api.request('GET', `/api/v1/alerts/${firing}`, { token: tenant.orgToken });
    expect(alert.body.suppressedBy).toEqual({ maintenanceWindowId: window.id });
    await eventually(() => told(elsewhere).length === 1);
    expect(told(firing)).toEqual([]);
    await t.api.request('POST', `/api/v1/alerts/${resolvedMeanwhile}/resolve`, { token: tenant.orgToken, body: {} });

    const ended = await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/end`, {
      token: tenant.orgToken,
    });
    expect(ended.status).toBe(200);
    expect(ended.body.active).toBeNull();
    await eventually(() => told(firing).length === 1);
    // Told once, however often the end is replayed; the one resolved during the window never.
    await notifyAfterWindow(appDb(), window.id);
    await eventually(async () => {
      const log = await t.api.request('GET', `/api/v1/alerts/${firing}/notifications`, { token: tenant.orgToken });
      return log.body.data[0]?.status === 'delivered';
    });
    expect(told(firing)).toHaveLength(1);
    expect(told(resolvedMeanwhile)).toEqual([]);
    expect(await auditRowsOf(t.db.admin, 'maintenance.end', window.id)).toHaveLength(1);
    const again = await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/end`, {
      token: tenant.orgToken,
    });
    expect(again.status).toBe(409);
    const after = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/maintenance`, {
      token: tenant.orgToken,
    });
    expect(after.body.inMaintenance).toBe(false);
  });

  it('a severity at or above allowSeverity still gets through', async () => {
    const window = await createWindow({
      schedule: { start: '2027-06-01T00:00:00', durationMinutes: 60 },
      allowSeverity: 'critical',
    });
    await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/start`, {
      token: tenant.orgToken,
      body: { minutes: 30 },
    });
    const critical = await raise('critical');
    const medium = await raise('medium');
    await eventually(() => told(critical).length === 1);
    const held = await t.api.request('GET', `/api/v1/alerts/${medium}`, { token: tenant.orgToken });
    expect(held.body.suppressedBy).toEqual({ maintenanceWindowId: window.id });
    await t.api.request('DELETE', `/api/v1/maintenance-windows/${window.id}`, { token: tenant.orgToken });
    // Deleting a window in progress ends it: what it held back is told.
    await eventually(() => told(medium).length === 1);
    expect(await auditRowsOf(t.db.admin, 'maintenance.delete', window.id)).toHaveLength(1);
  });

  it('a dynamic group targeted covers the devices its filter matches now, and no other', async () => {
    const group = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: {
        name: 'Maintained hosts',
        type: 'dynamic',
        filter: { field: 'hostname', op: 'equals', value: 'maint-host' },
      },
    });
    expect(group.status).toBe(201);
    const window = await createWindow({
      schedule: { start: '2027-07-01T00:00:00', durationMinutes: 60 },
      targets: { groupIds: [group.body.id] },
    });
    await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/start`, {
      token: tenant.orgToken,
      body: { minutes: 30 },
    });
    const covered = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/maintenance`, {
      token: tenant.orgToken,
    });
    expect(covered.body).toMatchObject({ inMaintenance: true, windows: [{ id: window.id }] });
    const spared = await t.api.request('GET', `/api/v1/devices/${bystander.deviceId}/maintenance`, {
      token: tenant.orgToken,
    });
    expect(spared.body).toMatchObject({ inMaintenance: false, windows: [] });
    const held = await raise('medium');
    expect(
      (await t.api.request('GET', `/api/v1/alerts/${held}`, { token: tenant.orgToken })).body.suppressedBy,
    ).toEqual({ maintenanceWindowId: window.id });
    const told_ = await raise('medium', bystander.deviceId);
    await eventually(() => told(told_).length === 1);
    await t.api.request('POST', `/api/v1/maintenance-windows/${window.id}/end`, { token: tenant.orgToken });
  });

  it('a scheduled occurrence in progress starts at creation; its end job ends it once; a stale start does nothing', async () => {
    const local = new Date(Date.now() - 10 * 60_000).toISOString().slice(0, 19);
    const start = new Date(`${local}Z`);
    const window = await createWindow({
      schedule: { rrule: 'FREQ=DAILY', start: local, timezone: 'UTC', durationMinutes: 60 },
      targets: { siteIds: [tenant.siteId] },
    });
    expect(window.active).toMatchObject({ occurrenceKey: local, manual: false });
    expect(await auditRowsOf(t.db.admin, 'maintenance.start', window.id)).toMatchObject([{ actorType: 'system' }]);
    const version = (
      await t.db.admin.query<{ version: number }>('SELECT version FROM maintenance_windows WHERE id = :id::uuid', {
        id: window.id,
      })
    ).rows[0]!.version;
    // The same occurrence armed twice starts once.
    expect(await startOccurrence(appDb(), { windowId: window.id, version, key: local, at: start.getTime() })).toBe(
      'duplicate',
    );
    const until = Date.parse(window.active.until);
    const ended = await endOccurrence(
      appDb(),
      { windowId: window.id, key: local, until },
      () => Promise.resolve(),
      new Date(until),
    );
    expect(ended).toBe('ended');
    expect(
      await endOccurrence(
        appDb(),
        { windowId: window.id, key: local, until },
        () => Promise.resolve(),
        new Date(until),
      ),
    ).toBe('moved');
    const read = await t.api.request('GET', `/api/v1/maintenance-windows/${window.id}`, { token: tenant.orgToken });
    expect(read.body.active).toBeNull();
    expect(read.body.nextOccurrence.key.slice(11)).toBe(local.slice(11));
    // A change moves the window: the start armed for the old version does nothing.
    await t.api.request('PATCH', `/api/v1/maintenance-windows/${window.id}`, {
      token: tenant.orgToken,
      body: { name: 'Renamed' },
    });
    const next = Date.parse(read.body.nextOccurrence.utc);
    expect(
      await startOccurrence(
        appDb(),
        { windowId: window.id, version, key: read.body.nextOccurrence.key, at: next },
        new Date(next),
      ),
    ).toBe('moved');
    expect(await auditRowsOf(t.db.admin, 'maintenance.update', window.id)).toHaveLength(1);
  });
});

describe('GET /schedules/preview', () => {
  it('lists occurrences from dtstart on in local time and UTC', async () => {
    const reply = await t.api.request(
      'GET',
      '/api/v1/schedules/preview?rrule=FREQ%3DWEEKLY%3BBYDAY%3DSU&dtstart=2027-03-21T02:30:00&tz=Europe/Berlin&count=2',
      { token: tenant.orgToken },
    );
    expect(reply.body).toEqual({
      rrule: 'FREQ=WEEKLY;BYDAY=SU',
      dtstart: '2027-03-21T02:30:00',
      timezone: 'Europe/Berlin',
      occurrences: [
        { key: '2027-03-21T02:30:00', local: '2027-03-21T02:30:00+01:00', utc: '2027-03-21T01:30:00.000Z' },
        { key: '2027-03-28T02:30:00', local: '2027-03-28T03:30:00+02:00', utc: '2027-03-28T01:30:00.000Z' },
      ],
    });
  });

  it.each([
    ['rrule=FREQ%3DDAILY&dtstart=2027-03-21T02:30:00&tz=Nowhere/City', 'query.tz'],
    ['rrule=FREQ%3DMINUTELY&dtstart=2027-03-21T02:30:00&tz=UTC', 'query.rrule'],
    ['rrule=FREQ%3DDAILY&dtstart=2027-03-21&tz=UTC', 'query.dtstart'],
  ])('refuses %s naming %s', async (query, path) => {
    const reply = await t.api.request('GET', `/api/v1/schedules/preview?${query}`, { token: tenant.orgToken });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body.error.details)).toContain(path);
  });
});
