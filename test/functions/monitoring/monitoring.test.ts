import { beforeAll, describe, expect, it } from 'vitest';
import type { AuditContext } from '#shared/audit/writer.ts';
import { appDb, appStatementCount } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { runOfflineJob, uploadCheckResults } from '#shared/monitoring/evaluate.ts';
import { judgeEventLogItems } from '#shared/monitoring/event-log-items.ts';
import {
  insertSamples,
  insertSamplesAndWriteStates,
  pruneMonitoringData,
  type StateRow,
  selectStates,
  selectWindows,
  writeStates,
} from '#shared/monitoring/store.ts';
import { stepThrough } from '#shared/monitoring/transitions.ts';
import type { MetricItem } from '#shared/policies/schemas.ts';
import { deviceEvent, submitEvents } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let device: { agentId: string; deviceId: string; token: string };
let policyId: string;

const cpuItem = {
  key: 'cpu',
  type: 'metric',
  severity: 'high',
  metric: 'cpu.percent',
  op: 'gt',
  threshold: 90,
  clearThreshold: 80,
  windowSeconds: 120,
  aggregation: 'avg',
  pendingSeconds: 120,
};
const items = [
  cpuItem,
  {
    key: 'disk-c',
    type: 'metric',
    severity: 'critical',
    metric: 'disk.freePercent',
    volume: 'C:',
    op: 'lt',
    threshold: 10,
    clearThreshold: 15,
    windowSeconds: 60,
    aggregation: 'last',
    pendingSeconds: 0,
  },
  { key: 'spooler', type: 'service', severity: 'medium', name: 'Spooler', expect: 'running' },
  { key: 'offline', type: 'offline', severity: 'high', minutes: 5 },
];

const base = Date.parse('2026-11-20T10:00:00Z');
const at = (minute: number) => new Date(base + minute * 60_000).toISOString();
const metrics = (samples: unknown[], agent = device) =>
  t.api.request('PUT', `/api/v1/agents/${agent.agentId}/metrics`, { token: agent.token, body: { samples } });
const cpu = (minute: number, value: number) => ({ metric: 'cpu.percent', value, timestamp: at(minute) });
const states = async () => {
  const reply = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/monitor-states`, {
    token: tenant.orgToken,
  });
  expect(reply.status).toBe(200);
  return Object.fromEntries(reply.body.data.map((s: any) => [s.itemKey, s]));
};
const monitorAlerts = async (token = tenant.orgToken) =>
  (await t.api.request('GET', '/api/v1/alerts?source=monitor', { token })).body.data as any[];
const evaluations = async () =>
  (
    await t.db.admin.query<{ details: any }>(
      `SELECT details FROM audit_logs WHERE action = 'policy.evaluate' AND resource_id = :id::uuid ORDER BY seq`,
      { id: device.deviceId },
    )
  ).rows.map((r) => `${r.details.itemKey}:${r.details.before.state}>${r.details.after.state}`);

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  device = await enrollDevice(t.api, tenant, 'SRV-1');
  const created = await t.api.request('POST', '/api/v1/policies', {
    token: tenant.partnerToken,
    body: { kind: 'monitoring', name: 'Baseline', availability: 'partner', items },
  });
  policyId = created.body.id;
  await t.api.request('POST', `/api/v1/policies/${policyId}/assignments`, {
    token: tenant.partnerToken,
    body: { level: 'partner', targetId: tenant.partnerId },
  });
});

describe('the agent protocol', () => {
  it('the heartbeat names the config version; the config lists the effective items', async () => {
    const hb = await t.api.request('POST', `/api/v1/agents/${device.agentId}/heartbeat`, {
      token: device.token,
      body: {},
    });
    const config = await t.api.request('GET', `/api/v1/agents/${device.agentId}/config`, { token: device.token });
    expect(config.status).toBe(200);
    expect(config.body.configVersion).toBe(hb.body.configVersion);
    expect(config.body.monitoring.map((i: any) => i.key).sort()).toEqual(['cpu', 'disk-c', 'offline', 'spooler']);
    // Another agent's id is refused, as on every agent route.
    const stranger = await enrollDevice(t.api, other, 'X');
    expect(
      (await t.api.request('GET', `/api/v1/agents/${device.agentId}/config`, { token: stranger.token })).status,
    ).toBe(403);
  });

  it('refuses malformed samples with a 400 naming the field', async () => {
    for (const [sample, path] of [
      [{ metric: 'cpu.load', value: 1, timestamp: at(0) }, 'metric'],
      [{ metric: 'cpu.percent', value: 'x', timestamp: at(0) }, 'value'],
      [{ metric: 'cpu.percent', value: 1, timestamp: 'yesterday' }, 'timestamp'],
    ] as const) {
      const reply = await metrics([sample]);
      expect(reply.status).toBe(400);
      expect(JSON.stringify(reply.body)).toContain(path);
    }
  });
});

describe('metric items', () => {
  it('pending, then firing after the pending time, one alert naming the policy; hysteresis before it clears', async () => {
    // Two minutes of 50 %: ok.
    expect((await metrics([cpu(0, 50), cpu(1, 50)])).body.transitions).toEqual([]);
    // Above 90 on average over two minutes: pending from minute 3.
    const up = await metrics([cpu(2, 99), cpu(3, 99)]);
    expect(up.body.transitions).toEqual([{ itemKey: 'cpu', from: 'ok', to: 'pending' }]);
    expect((await states()).cpu.state).toBe('pending');
    expect(await monitorAlerts()).toEqual([]);
    // Held for the pending time (two minutes): firing, and one alert.
    const fired = await metrics([cpu(4, 97), cpu(5, 98)]);
    expect(fired.body.transitions).toEqual([{ itemKey: 'cpu', from: 'pending', to: 'firing' }]);
    const [alert] = await monitorAlerts();
    expect(alert).toMatchObject({
      source: { type: 'monitor', policyId, itemKey: 'cpu', policyVersion: 1 },
      severity: 'high',
      status: 'open',
      deviceId: device.deviceId,
    });
    expect(alert.details.evidence.length).toBeGreaterThan(0);
    const created = await t.db.admin.query<{ details: any }>(
      `SELECT details FROM audit_logs WHERE action = 'alert.create' AND resource_id = :id::uuid`,
      { id: alert.id },
    );
    expect(created.rows[0]!.details.source).toEqual({ type: 'monitor', policyId, itemKey: 'cpu', policyVersion: 1 });
    // Between the clear threshold and the threshold: still firing (no flapping).
    await metrics([cpu(6, 85), cpu(7, 85)]);
    expect((await states()).cpu.state).toBe('firing');
    // Below the clear threshold, but not yet for the pending time: still firing.
    await metrics([cpu(8, 20), cpu(9, 20)]);
    expect((await states()).cpu.state).toBe('firing');
    // Held for two minutes: ok, and the alert resolved.
    const cleared = await metrics([cpu(10, 20), cpu(11, 20)]);
    expect(cleared.body.transitions).toEqual([{ itemKey: 'cpu', from: 'firing', to: 'ok' }]);
    const after = (await monitorAlerts()).find((a) => a.id === alert.id);
    expect(after.status).toBe('resolved');
    expect(await evaluations()).toEqual(['cpu:ok>pending', 'cpu:pending>firing', 'cpu:firing>ok']);
    const s = (await states()).cpu;
    expect(s).toMatchObject({ state: 'ok', firedCount: 1, resolvedCount: 1, alertId: null, lastValue: 20 });
  });

  it('a spike shorter than the pending time raises nothing', async () => {
    await metrics([cpu(20, 99), cpu(21, 99)]);
    expect((await states()).cpu.state).toBe('pending');
    await metrics([cpu(22, 10), cpu(23, 10)]);
    expect((await states()).cpu.state).toBe('ok');
    expect((await monitorAlerts()).filter((a) => a.status !== 'resolved')).toEqual([]);
  });

  it('stores duplicate and late samples once, and a late sample moves nothing back', async () => {
    const first = await metrics([cpu(30, 40), cpu(30, 40), cpu(31, 40)]);
    expect(first.body).toMatchObject({ accepted: 2, duplicates: 1 });
    const again = await metrics([cpu(30, 40)]);
    expect(again.body).toMatchObject({ accepted: 0, duplicates: 1, transitions: [] });
    // A sample of long ago, above the threshold: stored, evaluated at no time before the last evaluation.
    const late = await metrics([cpu(-600, 100)]);
    expect(late.body).toMatchObject({ accepted: 1, transitions: [] });
    const rows = await t.db.admin.query(
      'SELECT count(*)::int AS n FROM device_metric_samples WHERE device_id = :id::uuid',
      {
        id: device.deviceId,
      },
    );
    expect(rows.rows[0]!.n).toBeGreaterThan(0);
  });

  it('judges a disk item on its own volume only, and reads samples back', async () => {
    const reply = await metrics([
      { metric: 'disk.freePercent', volume: 'D:', value: 1, timestamp: at(40) },
      { metric: 'disk.freePercent', volume: 'C:', value: 50, timestamp: at(40) },
    ]);
    expect(reply.body.transitions).toEqual([]);
    const low = await metrics([{ metric: 'disk.freePercent', volume: 'C:', value: 5, timestamp: at(41) }]);
    expect(low.body.transitions).toEqual([{ itemKey: 'disk-c', from: 'ok', to: 'firing' }]);
    const read = await t.api.request(
      'GET',
      `/api/v1/devices/${device.deviceId}/metrics?metric=disk.freePercent&from=${at(39)}&to=${at(42)}`,
      { token: tenant.orgToken },
    );
    expect(read.body.samples.map((s: any) => [s.volume, s.value])).toEqual([
      ['C:', 50],
      ['D:', 1],
      ['C:', 5],
    ]);
    expect(
      (
        await t.api.request('GET', `/api/v1/devices/${device.deviceId}/metrics?metric=disk.freePercent`, {
          token: other.orgToken,
        })
      ).status,
    ).toBe(404);
  });
});

describe('an upload that moves nothing', () => {
  it('is a read and one write, without the lock and transaction of an upload that moves an item', async () => {
    // Settled first: ok and evaluated at minute 51.
    await metrics([cpu(50, 30), cpu(51, 30)]);
    const before = await states();
    const counted = appStatementCount();
    const quiet = await metrics([cpu(52, 35), cpu(52, 35), cpu(53, 40)]);
    // The token lookup, the windows read, the samples and states written: three statements.
    expect(appStatementCount() - counted).toBe(3);
    expect(quiet.body).toEqual({ accepted: 2, duplicates: 1, ignored: 0, transitions: [] });
    const after = await states();
    expect(after.cpu).toMatchObject({ state: 'ok', lastValue: 37.5, firedCount: before.cpu.firedCount });
    expect(Date.parse(after.cpu.lastEvaluatedAt)).toBe(Date.parse(at(53)));
    // One that moves an item takes the transaction, as before.
    const counting = appStatementCount();
    const moved = await metrics([cpu(54, 99), cpu(55, 99)]);
    expect(moved.body.transitions).toEqual([{ itemKey: 'cpu', from: 'ok', to: 'pending' }]);
    expect(appStatementCount() - counting).toBeGreaterThan(3);
    await metrics([cpu(56, 10), cpu(57, 10)]);
    expect((await states()).cpu.state).toBe('ok');
  });

  it('leaves a state another evaluation wrote since it was read, and stores its samples all the same', async () => {
    const read = await selectWindows(t.db.admin, device.deviceId, [
      { key: 'cpu', metric: 'cpu.percent', volume: null, from: at(57), to: at(58) },
    ]);
    const seen = read[0]!;
    expect(seen.version).toEqual(expect.any(String));
    // Another evaluation writes the state meanwhile.
    await t.db.admin.query(
      `UPDATE monitor_states SET last_value = 12 WHERE device_id = :id::uuid AND item_key = 'cpu'`,
      { id: device.deviceId },
    );
    const outcome = await insertSamplesAndWriteStates(
      t.db.admin,
      device.deviceId,
      tenant.orgId,
      [{ metric: 'cpu.percent', volume: '', at: at(58), value: 33 }],
      [{ ...seen.state!, lastValue: 33, lastEvaluatedAt: new Date(at(58)), version: seen.version }],
    );
    expect(outcome).toEqual({ accepted: 1, writtenKeys: [] });
    expect((await states()).cpu).toMatchObject({ lastValue: 12 });
    // Read again, the same write goes through.
    const again = (
      await selectWindows(t.db.admin, device.deviceId, [
        { key: 'cpu', metric: 'cpu.percent', volume: null, from: at(57), to: at(58) },
      ])
    )[0]!;
    const written = await insertSamplesAndWriteStates(
      t.db.admin,
      device.deviceId,
      tenant.orgId,
      [],
      [{ ...again.state!, lastValue: 33, version: again.version }],
    );
    expect(written).toEqual({ accepted: 0, writtenKeys: ['cpu'] });
    expect((await states()).cpu).toMatchObject({ lastValue: 33 });
  });
});

describe('an upload that moves nothing, beside one evaluated under the lock', () => {
  it('waits for the lock to write, finds the state written meanwhile, and is evaluated again after it', async () => {
    const raceDevice = await enrollDevice(t.api, tenant, 'RACE-1');
    const upload = (samples: unknown[]) => metrics(samples, raceDevice);
    const cpuState = async () => (await selectStates(t.db.admin, raceDevice.deviceId, ['cpu']))[0]!;
    // Pending from minute 100 (95 on average over two minutes, not yet for the pending time).
    expect((await upload([cpu(100, 95)])).body.transitions).toEqual([{ itemKey: 'cpu', from: 'ok', to: 'pending' }]);
    // Another upload is evaluated under the device's lock, as the transaction does: 10 at 100:30 cancels the pending.
    let quiet: ReturnType<typeof upload> | undefined;
    await t.db.admin.transaction(async (tx) => {
      await insertSamples(tx, raceDevice.deviceId, tenant.orgId, [
        { metric: 'cpu.percent', volume: '', at: at(100.5), value: 10 },
      ]);
      const [window] = await selectWindows(tx, raceDevice.deviceId, [
        { key: 'cpu', metric: 'cpu.percent', volume: null, from: at(98.5), to: at(100.5) },
      ]);
      const series = (window!.samples ?? []).map((sample) => ({ ...sample, at: Number(sample.at) }));
      const { state, steps } = stepThrough(cpuItem as MetricItem, window!.state!, series, [Date.parse(at(100.5))]);
      expect(steps.map((step) => step.transition)).toEqual(['cancel']);
      // Meanwhile an upload that moves nothing by what it reads (95 at minute 101: still pending) reaches its write,
      // which waits for the lock.
      let answered = false;
      quiet = upload([cpu(101, 95)]).finally(() => {
        answered = true;
      });
      for (;;) {
        const { rows } = await t.db.admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%expected AS%'`,
        );
        if (answered || rows[0]!.n > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await writeStates(tx, raceDevice.deviceId, tenant.orgId, [state as StateRow]);
    });
    const reply = await quiet!;
    expect(reply.body).toMatchObject({ accepted: 1, duplicates: 0 });
    // Evaluated after the other: ok at 100:30, then 95 at 101 averages 52.5 over 100:00–101:00 with 10 at 100:30.
    const final = await cpuState();
    expect(final.lastEvaluatedAt!.toISOString()).toBe(at(101));
    expect(final.state).toBe('ok');
    expect(reply.body.transitions).toEqual([]);
    // The organization's samples as the retention test below counts them.
    await t.db.admin.query('DELETE FROM device_metric_samples WHERE device_id = :id::uuid', {
      id: raceDevice.deviceId,
    });
  });
});

describe('check results', () => {
  const check = (status: string, minute: number, itemKey = 'spooler') =>
    t.api.request('POST', `/api/v1/agents/${device.agentId}/check-results`, {
      token: device.token,
      body: { results: [{ itemKey, status, output: 'Spooler is stopped', timestamp: at(minute) }] },
    });

  it('a failed service check fires, a passed one clears; results of no item in force are ignored', async () => {
    const failed = await check('fail', 50);
    expect(failed.body).toMatchObject({ accepted: 1, transitions: [{ itemKey: 'spooler', from: 'ok', to: 'firing' }] });
    expect((await check('fail', 50)).body).toMatchObject({ accepted: 0, duplicates: 1, transitions: [] });
    expect((await check('fail', 51, 'unknown-check')).body).toMatchObject({ ignored: 1, accepted: 0 });
    const open = (await monitorAlerts()).find((a) => a.source.itemKey === 'spooler' && a.status === 'open');
    expect(open.severity).toBe('medium');
    expect((await check('pass', 52)).body.transitions).toEqual([{ itemKey: 'spooler', from: 'firing', to: 'ok' }]);
    expect((await monitorAlerts()).find((a) => a.id === open.id).status).toBe('resolved');
    // Passes that move nothing: the token lookup, the states read and one write, no transaction; a repeat counted.
    const counted = appStatementCount();
    const quiet = await check('pass', 53);
    expect(appStatementCount() - counted).toBe(3);
    expect(quiet.body).toEqual({ accepted: 1, duplicates: 0, ignored: 0, transitions: [] });
    expect(Date.parse((await states()).spooler.lastEvaluatedAt)).toBe(Date.parse(at(53)));
    expect((await check('pass', 53)).body).toEqual({ accepted: 0, duplicates: 1, ignored: 0, transitions: [] });
  });

  it('evaluates under the lock what a state written meanwhile kept from its write, once', async () => {
    const caller = {
      actorType: 'agent' as const,
      agentId: device.agentId,
      deviceId: device.deviceId,
      orgId: tenant.orgId,
    };
    // Another evaluation writes the item's state between the read and the write of this upload.
    const interleaved = (db: Db): Db => ({
      ...db,
      query: async (sql, params) => {
        if (sql.includes('expected AS'))
          await t.db.admin.query(
            `UPDATE monitor_states SET last_value = 1 WHERE device_id = :id::uuid AND item_key = 'spooler'`,
            { id: device.deviceId },
          );
        return db.query(sql, params);
      },
    });
    const db = interleaved(appDb());
    const audit: AuditContext = { db, caller: null, pending: [] };
    const body = { results: [{ itemKey: 'spooler', status: 'fail' as const, output: 'stopped', timestamp: at(60) }] };
    // A failure moves the item: no quiet write, the transaction as before.
    const fired = await uploadCheckResults(db, caller, device.agentId, body, audit);
    expect(fired).toMatchObject({ accepted: 1, transitions: [{ itemKey: 'spooler', from: 'ok', to: 'firing' }] });
    const { firedCount } = (await states()).spooler;
    // Still failing: nothing moves, so the quiet write stores the result, finds the state written meanwhile, and the
    // result it stored is evaluated under the lock: once, with the latest state.
    const held = await uploadCheckResults(
      db,
      caller,
      device.agentId,
      { results: [{ ...body.results[0]!, timestamp: at(61) }] },
      audit,
    );
    expect(held).toEqual({ accepted: 1, duplicates: 0, ignored: 0, transitions: [] });
    const state = (await states()).spooler;
    expect(state).toMatchObject({ state: 'firing', firedCount });
    expect(Date.parse(state.lastEvaluatedAt)).toBe(Date.parse(at(61)));
    await check('pass', 62);
    expect((await states()).spooler.state).toBe('ok');
  });
});

describe('event-log items', () => {
  it('fire when enough matching events were ingested within the window, and clear once they left it', async () => {
    const p = await t.api.request('POST', '/api/v1/policies', {
      token: tenant.orgToken,
      body: {
        kind: 'monitoring',
        name: 'Disk errors',
        orgId: tenant.orgId,
        items: [
          {
            key: 'disk-errors',
            type: 'event-log',
            severity: 'critical',
            source: 'disk',
            level: 'error',
            text: 'bad block',
            count: 2,
            windowSeconds: 600,
          },
        ],
      },
    });
    await t.api.request('POST', `/api/v1/policies/${p.body.id}/assignments`, {
      token: tenant.orgToken,
      body: { level: 'device', targetId: device.deviceId },
    });
    const diskError = (n: number) =>
      deviceEvent(n, {
        source: 'disk',
        level: 'error',
        category: 'hardware',
        eventId: `disk-${n}`,
        message: `The device has a bad block (${n})`,
      });
    // Other events match nothing; one match is below the count.
    await submitEvents(t.api, device, [deviceEvent(1), diskError(2)]);
    expect((await states())['disk-errors'].state).toBe('ok');
    await submitEvents(t.api, device, [diskError(3)]);
    expect((await states())['disk-errors'].state).toBe('firing');
    const alert = (await monitorAlerts()).find((a) => a.source.itemKey === 'disk-errors' && a.status === 'open');
    expect(alert.severity).toBe('critical');
    // Later: the events left the window; the armed job judges it again and it clears.
    await t.db.admin.query(
      `UPDATE device_event_logs SET timestamp = timestamp - interval '1 hour' WHERE device_id = :id::uuid AND source = 'disk'`,
      { id: device.deviceId },
    );
    await judgeEventLogItems(appDb(), device.deviceId, 'disk-errors');
    expect((await states())['disk-errors'].state).toBe('ok');
    expect((await monitorAlerts()).find((a) => a.id === alert.id).status).toBe('resolved');
  });
});

describe('offline', () => {
  const armed = async () =>
    (
      await t.db.admin.query<{ armed_until: Date; state: string }>(
        `SELECT armed_until, state FROM monitor_states WHERE device_id = :id::uuid AND item_key = 'offline'`,
        { id: device.deviceId },
      )
    ).rows[0];
  const heartbeat = () =>
    t.api.request('POST', `/api/v1/agents/${device.agentId}/heartbeat`, { token: device.token, body: {} });
  /** The offline item's job, armed until `until`, delivered now. */
  const offlineJobDue = (until: Date) =>
    runOfflineJob(appDb(), {
      kind: 'monitoring.offline',
      deviceId: device.deviceId,
      itemKey: 'offline',
      until: until.toISOString(),
    });
  const silentForTenMinutes = () =>
    t.db.admin.query(`UPDATE devices SET last_seen_at = now() - interval '10 minutes' WHERE id = :id::uuid`, {
      id: device.deviceId,
    });

  it('a heartbeat arms the job; a device seen since it was armed raises nothing, one silent fires and comes back', async () => {
    await heartbeat();
    const first = await armed();
    expect(first!.state).toBe('ok');
    expect(first!.armed_until.getTime()).toBeGreaterThan(Date.now() + 4 * 60_000);
    // A second heartbeat while armed writes nothing new.
    await heartbeat();
    expect((await armed())!.armed_until).toEqual(first!.armed_until);

    // The job comes due while the device was seen a minute ago: nothing raised, armed again from its last heartbeat.
    await t.db.admin.query(`UPDATE devices SET last_seen_at = now() - interval '1 minute' WHERE id = :id::uuid`, {
      id: device.deviceId,
    });
    await offlineJobDue(first!.armed_until);
    const rearmed = await armed();
    expect(rearmed!.state).toBe('ok');
    expect(rearmed!.armed_until.getTime()).toBeLessThan(first!.armed_until.getTime());
    // A job an arm replaced does nothing.
    await silentForTenMinutes();
    await offlineJobDue(first!.armed_until);
    expect((await armed())!.state).toBe('ok');
    // The armed job, with the device silent for ten minutes: firing.
    await offlineJobDue(rearmed!.armed_until);
    expect((await armed())!.state).toBe('firing');
    const alert = (await monitorAlerts()).find((a) => a.source.itemKey === 'offline' && a.status === 'open');
    expect(alert).toBeDefined();
    // It heartbeats again: the alert resolves and the item is armed again.
    await heartbeat();
    expect((await armed())!.state).toBe('ok');
    expect((await monitorAlerts()).find((a) => a.id === alert.id).status).toBe('resolved');
  });

  it('a live connection keeps the device online: the item clears at $connect, stays unarmed, and is armed when it closes', async () => {
    const before = await armed();
    await silentForTenMinutes();
    await offlineJobDue(before!.armed_until);
    expect((await armed())!.state).toBe('firing');
    const alert = (await monitorAlerts()).find((a) => a.source.itemKey === 'offline' && a.status === 'open');
    const connection = await TestConnection.open(t.api, device.token);
    let open = true;
    try {
      // $connect brings the device back: the item clears, and nothing is armed while the connection stands.
      expect(await armed()).toMatchObject({ state: 'ok', armed_until: null });
      expect((await monitorAlerts()).find((a) => a.id === alert.id).status).toBe('resolved');
      // Its heartbeats, far apart, are news: none arms the item, and silence between them fires nothing.
      await t.db.admin.query(`UPDATE devices SET last_seen_at = now() - interval '30 minutes' WHERE id = :id::uuid`, {
        id: device.deviceId,
      });
      connection.send({ type: 'heartbeat' });
      expect(await connection.next()).toMatchObject({
        type: 'heartbeat.ack',
        configVersion: expect.any(String),
        heartbeatSeconds: 900,
      });
      expect(await armed()).toMatchObject({ state: 'ok', armed_until: null });
      await connection.close();
      open = false;
      // Closed: armed for the close + the item's minutes.
      await eventually(async () => (await armed())!.armed_until !== null);
      expect((await armed())!.armed_until.getTime()).toBeGreaterThan(Date.now() + 4 * 60_000);
    } finally {
      if (open) await connection.close();
    }
  });
});

describe('backtest', () => {
  it('replays the stored samples of the devices the item applies to', async () => {
    const reply = await t.api.request('POST', `/api/v1/policies/${policyId}/items/cpu/backtest`, {
      token: tenant.partnerToken,
      body: { from: at(-1), to: at(60) },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.devices).toEqual([
      expect.objectContaining({ deviceId: device.deviceId, fired: 1, resolved: 1, firingAtEnd: false }),
    ]);
    // A stricter threshold would not have fired at all.
    const notMetric = await t.api.request('POST', `/api/v1/policies/${policyId}/items/spooler/backtest`, {
      token: tenant.partnerToken,
      body: { from: at(-1), to: at(60) },
    });
    expect(notMetric.status).toBe(400);
    expect(
      (
        await t.api.request('POST', `/api/v1/policies/${policyId}/items/cpu/backtest`, {
          token: other.partnerToken,
          body: { from: at(-1), to: at(60) },
        })
      ).status,
    ).toBe(404);
  });
});

describe('retention', () => {
  it("the daily prune deletes samples and check results past the organization's retention, and keeps the rest", async () => {
    const count = async (table: string) =>
      (
        await t.db.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE device_id = :id::uuid`, {
          id: device.deviceId,
        })
      ).rows[0]!.n;
    const recent = await metrics([{ metric: 'memory.percent', value: 30, timestamp: new Date().toISOString() }]);
    expect(recent.body.accepted).toBe(1);
    const samplesBefore = await count('device_metric_samples');
    const resultsBefore = await count('monitor_check_results');
    // The test samples are of 2026-11-20; a retention of one day makes them old, the one of now stays.
    const settings = `/api/v1/orgs/organizations/${tenant.orgId}/monitoring-settings`;
    expect((await t.api.request('GET', settings, { token: tenant.orgToken })).body.sampleRetentionDays).toBe(30);
    expect(
      (await t.api.request('PUT', settings, { token: tenant.orgToken, body: { sampleRetentionDays: 0 } })).status,
    ).toBe(400);
    expect(
      (await t.api.request('PUT', settings, { token: other.orgToken, body: { sampleRetentionDays: 1 } })).status,
    ).toBe(404);
    const put = await t.api.request('PUT', settings, { token: tenant.orgToken, body: { sampleRetentionDays: 1 } });
    expect(put.body).toEqual({ orgId: tenant.orgId, sampleRetentionDays: 1, override: 1 });
    const audited = await t.db.admin.query<{ details: any }>(
      `SELECT details FROM audit_logs WHERE action = 'organization.update' AND resource_id = :id::uuid`,
      { id: tenant.orgId },
    );
    expect(audited.rows.at(-1)!.details.after).toEqual({ monitoringRetentionDays: 1 });
    const auditAdmin = createPgDb({ connectionString: t.db.urls.auditAdmin, max: 1 });
    try {
      expect(await pruneMonitoringData(auditAdmin)).toBe(samplesBefore - 1 + resultsBefore);
    } finally {
      await auditAdmin.close();
    }
    expect(await count('device_metric_samples')).toBe(1);
    expect(await count('monitor_check_results')).toBe(0);
  });
});
