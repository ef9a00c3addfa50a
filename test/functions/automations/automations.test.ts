import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { runDeviceEventJobs } from '#functions/queue/jobs.ts';
import { signature } from '#shared/alerts/psa-delivery.ts';
import { runOccurrence } from '#shared/automations/schedule.ts';
import { appDb } from '#shared/db/client.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { auditRowsOf, scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let scriptId: string;
let device: { deviceId: string; token: string };

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Initech');
  other = await createTenant(t.api, 'Umbrella');
  const script = await t.api.request('POST', '/api/v1/scripts', {
    token: tenant.orgToken,
    body: {
      ...scriptBody({
        name: 'Restart spooler',
        parameters: [
          { name: 'days', type: 'number', required: true },
          { name: 'password', type: 'string', secret: true },
        ],
      }),
      orgId: tenant.orgId,
    },
  });
  scriptId = script.body.id;
  device = await enrollDevice(t.api, tenant, 'auto-host');
});

const create = (body: Record<string, unknown>, token = tenant.orgToken, headers: Record<string, string> = {}) =>
  t.api.request('POST', '/api/v1/automations', {
    token,
    headers,
    body: {
      orgId: tenant.orgId,
      name: `Automation ${randomUUID().slice(0, 8)}`,
      triggers: [{ type: 'manual' }],
      actions: [{ type: 'run-script', scriptId, parameters: { days: 3, password: 'hunter2' } }],
      ...body,
    },
  });
const count = async (table: string) =>
  Number((await t.db.admin.query(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
const getRun = async (runId: string, token = tenant.orgToken) =>
  (await t.api.request('GET', `/api/v1/automation-runs/${runId}`, { token })).body;
const runsOf = async (automationId: string) =>
  (await t.api.request('GET', `/api/v1/automations/${automationId}/runs?limit=200`, { token: tenant.orgToken })).body
    .data as Record<string, any>[];

/** A maintenance window over one device, started by hand for 30 minutes. */
async function windowStartedOn(
  deviceId: string,
  name: string,
  suppress: string[],
  targets: Record<string, string[]> = { deviceIds: [deviceId] },
) {
  const window = await t.api.request('POST', '/api/v1/maintenance-windows', {
    token: tenant.orgToken,
    body: {
      orgId: tenant.orgId,
      name,
      schedule: { start: '2027-01-03T02:00:00', durationMinutes: 60 },
      targets,
      suppress,
    },
  });
  expect(window.status).toBe(201);
  const started = await t.api.request('POST', `/api/v1/maintenance-windows/${window.body.id}/start`, {
    token: tenant.orgToken,
    body: { minutes: 30 },
  });
  expect(started.status).toBe(200);
  return window.body as { id: string };
}

describe('automations', () => {
  it('creates, versions, changes and deletes an automation, audited, secrets sealed and write-only', async () => {
    const name = `Nightly ${randomUUID().slice(0, 8)}`;
    const created = await create({ name }, tenant.orgToken, { 'idempotency-key': 'create-once' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      orgId: tenant.orgId,
      availability: 'organization',
      enabled: true,
      version: 1,
    });
    expect(created.body.actions[0]).toMatchObject({ parameters: { days: 3 }, secretParameters: ['password'] });
    expect(JSON.stringify(created.body)).not.toContain('hunter2');
    const again = await create({ name }, tenant.orgToken, { 'idempotency-key': 'create-once' });
    expect(again.body.id).toBe(created.body.id);
    const stored = await t.db.admin.query("SELECT count(*) AS n FROM automations WHERE actions::text LIKE '%hunter2%'");
    expect(Number(stored.rows[0]!.n)).toBe(0);
    const id = created.body.id;
    const patched = await t.api.request('PATCH', `/api/v1/automations/${id}`, {
      token: tenant.orgToken,
      body: { enabled: false },
    });
    expect(patched.body).toMatchObject({ enabled: false, version: 2 });
    const versions = await t.api.request('GET', `/api/v1/automations/${id}/versions`, { token: tenant.orgToken });
    expect(versions.body.data.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect((await auditRowsOf(t.db.admin, 'automation.create', id)).length).toBe(1);
    expect((await auditRowsOf(t.db.admin, 'automation.update', id))[0]!.details).toMatchObject({
      before: { enabled: true },
      after: { enabled: false },
    });
    for (const token of [other.orgToken, other.partnerToken]) {
      expect((await t.api.request('GET', `/api/v1/automations/${id}`, { token })).status).toBe(404);
      expect((await t.api.request('PATCH', `/api/v1/automations/${id}`, { token, body: { name: 'x' } })).status).toBe(
        404,
      );
    }
    expect((await t.api.request('DELETE', `/api/v1/automations/${id}`, { token: tenant.orgToken })).status).toBe(204);
    expect((await t.api.request('GET', `/api/v1/automations/${id}`, { token: tenant.orgToken })).status).toBe(404);
    expect((await auditRowsOf(t.db.admin, 'automation.delete', id)).length).toBe(1);
  });

  it.each([
    [{ triggers: [] }, 'body.triggers'],
    [
      { triggers: [{ type: 'schedule', schedule: { rrule: 'FREQ=SECONDLY', start: '2027-01-01T03:00:00' } }] },
      'body.triggers.0.schedule.rrule',
    ],
    [{ triggers: [{ type: 'event', event: 'device.exploded' }] }, 'body.triggers.0.event'],
    [{ actions: [{ type: 'run-script', scriptId: randomUUID() }] }, 'body.actions.0.scriptId'],
    [
      { actions: [{ type: 'run-script', scriptId: '$script', parameters: { days: 'x' } }] },
      'body.actions.0.parameters.days',
    ],
    [{ actions: [{ type: 'add-to-group', groupId: randomUUID() }] }, 'body.actions.0.groupId'],
    [{ conditions: { field: 'hostname', op: 'teleports', value: 'x' } }, 'body.conditions.op'],
  ])('refuses %o naming %s, storing nothing', async (body, path) => {
    const before = await count('automations');
    const resolved = JSON.parse(JSON.stringify(body).replace('$script', scriptId));
    const reply = await create(resolved);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    expect(await count('automations')).toBe(before);
  });

  it('runs manually: script runs dispatched to the agent, items linked, a duplicate request runs nothing twice', async () => {
    const agent = await TestConnection.open(t.api, device.token);
    try {
      const automation = (await create({})).body;
      const run = (body: unknown) =>
        t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
          token: tenant.orgToken,
          headers: { 'idempotency-key': 'run-1' },
          body,
        });
      const reply = await run({ deviceIds: [device.deviceId] });
      expect(reply.status).toBe(202);
      expect(reply.body.runs).toHaveLength(1);
      const message = await agent.next();
      expect(message).toMatchObject({ type: 'script.run', parameters: { days: 3, password: 'hunter2' } });
      expect((await run({ deviceIds: [device.deviceId] })).body.runs[0].id).toBe(reply.body.runs[0].id);
      expect(await runsOf(automation.id)).toHaveLength(1);
      const runId = reply.body.runs[0].id;
      const [item] = (await getRun(runId)).items;
      expect(item).toMatchObject({ deviceId: device.deviceId, status: 'running' });
      expect(item.actions[0]).toMatchObject({ type: 'run-script', status: 'dispatched' });
      expect(item.actions[0].scriptRunItemId).toBe(message.runItemId);
      agent.send({ runItemId: message.runItemId, status: 'started' });
      agent.send({
        runItemId: message.runItemId,
        status: 'finished',
        exitCode: 0,
        stdout: 'spooler up',
        stderr: '',
        durationMs: 42,
      });
      await eventually(async () => (await getRun(runId)).status === 'completed');
      expect((await getRun(runId)).items[0].actions[0]).toMatchObject({ status: 'completed', output: 'spooler up' });
      const audit = await auditRowsOf(t.db.admin, 'automation.run', automation.id);
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ actorType: 'user', orgId: tenant.orgId });
      expect(audit[0]!.details.trigger).toMatchObject({ type: 'manual', occurrenceKey: 'manual:run-1' });
      expect((await t.api.request('GET', `/api/v1/automation-runs/${runId}`, { token: other.orgToken })).status).toBe(
        404,
      );
      const stranger = await enrollDevice(t.api, other, 'stranger');
      const foreign = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
        token: tenant.orgToken,
        body: { deviceIds: [stranger.deviceId] },
      });
      expect(foreign.status).toBe(404);
      expect(JSON.stringify(foreign.body)).not.toContain('stranger');
    } finally {
      await agent.close();
    }
  });

  it('dry-runs without running anything', async () => {
    const automation = (await create({ conditions: { field: 'hostname', op: 'equals', value: 'auto-host' } })).body;
    const before = await count('automation_runs');
    const reply = await t.api.request('POST', `/api/v1/automations/${automation.id}/dry-run`, {
      token: tenant.orgToken,
      body: {},
    });
    expect(reply.status).toBe(200);
    expect(reply.body.devices).toEqual([
      expect.objectContaining({
        deviceId: device.deviceId,
        wouldRun: true,
        actions: [expect.objectContaining({ type: 'run-script' })],
      }),
    ]);
    expect(await count('automation_runs')).toBe(before);
  });

  it('stops an alert-triggered automation whose action raises the same alert: the loop guard records the skips', async () => {
    const looped = await enrollDevice(t.api, tenant, 'loop-host');
    const automation = (
      await create({
        triggers: [{ type: 'event', event: 'alert.raised', filter: { sources: ['automation'] } }],
        conditions: { field: 'hostname', op: 'equals', value: 'loop-host' },
        actions: [{ type: 'raise-alert', severity: 'high', title: 'Loop' }],
        guards: { maxRunsPerDevice: 3 },
      })
    ).body;
    const manual = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
      token: tenant.orgToken,
      body: { deviceIds: [looped.deviceId] },
    });
    expect(manual.status).toBe(202);
    // The manual run raises the alert; each occurrence fires the automation until the guard skips one.
    await eventually(async () => (await runsOf(automation.id)).some((run) => run.status === 'skipped'));
    const runs = await runsOf(automation.id);
    const ran = runs.filter((run) => run.trigger.type === 'event' && run.status === 'completed');
    expect(ran).toHaveLength(3);
    expect(runs.filter((run) => run.status === 'skipped')).toHaveLength(1);
    const skipped = await getRun(runs.find((run) => run.status === 'skipped')!.id);
    expect(skipped.items[0]).toMatchObject({ status: 'skipped', skipReason: 'loop-guard' });
    const alerts = await t.db.admin.query<{ occurrences: number }>(
      "SELECT occurrences FROM alerts WHERE source_type = 'automation' AND device_id = :id::uuid",
      { id: looped.deviceId },
    );
    expect(alerts.rows).toEqual([{ occurrences: 4 }]);
  });

  it('skips a device in a maintenance window that suppresses automations, naming the window', async () => {
    const held = await enrollDevice(t.api, tenant, 'held-host');
    const window = await windowStartedOn(held.deviceId, 'Patch night', ['automations']);
    const automation = (await create({ actions: [{ type: 'raise-alert', severity: 'low', title: 'Held' }] })).body;
    const reply = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
      token: tenant.orgToken,
      body: { deviceIds: [held.deviceId] },
    });
    expect(reply.body.runs[0]).toMatchObject({ status: 'skipped' });
    expect(reply.body.runs[0].items[0]).toMatchObject({
      status: 'skipped',
      skipReason: 'maintenance',
      maintenanceWindowId: window.id,
    });
    // A window over a dynamic group holds the devices its filter matches now, and no other.
    const group = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: { name: 'Frozen kiosks', type: 'dynamic', filter: { field: 'hostname', op: 'equals', value: 'kiosk-1' } },
    });
    expect(group.status).toBe(201);
    const kiosk = await enrollDevice(t.api, tenant, 'kiosk-1');
    const desk = await enrollDevice(t.api, tenant, 'desk-1');
    const kiosks = await windowStartedOn(kiosk.deviceId, 'Kiosk freeze', ['automations'], {
      groupIds: [group.body.id],
    });
    const ids = [held.deviceId, kiosk.deviceId, desk.deviceId];
    const all = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
      token: tenant.orgToken,
      headers: { 'idempotency-key': randomUUID() },
      body: { deviceIds: ids },
    });
    expect(all.status).toBe(202);
    const items = new Map<string, Record<string, unknown>>(
      all.body.runs[0].items.map((item: { deviceId: string }) => [item.deviceId, item]),
    );
    expect(items.get(held.deviceId)).toMatchObject({ skipReason: 'maintenance', maintenanceWindowId: window.id });
    expect(items.get(kiosk.deviceId)).toMatchObject({ skipReason: 'maintenance', maintenanceWindowId: kiosks.id });
    expect(items.get(desk.deviceId)).toMatchObject({ skipReason: null });
  });

  it('holds back only the automations that run a script where a window suppresses scripts', async () => {
    const frozen = await enrollDevice(t.api, tenant, 'frozen-host');
    const window = await windowStartedOn(frozen.deviceId, 'Script freeze', ['scripts']);
    const run = async (actions: unknown[]) => {
      const automation = (await create({ actions })).body;
      const reply = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
        token: tenant.orgToken,
        body: { deviceIds: [frozen.deviceId] },
      });
      return reply.body.runs[0].items[0];
    };
    expect(await run([{ type: 'run-script', scriptId, parameters: { days: 3, password: 'x' } }])).toMatchObject({
      status: 'skipped',
      skipReason: 'maintenance',
      maintenanceWindowId: window.id,
    });
    expect(await run([{ type: 'raise-alert', severity: 'low', title: 'Not a script' }])).toMatchObject({
      skipReason: null,
    });
  });

  it('fires device-local schedules once per zone and occurrence, DST-correct, a duplicate job running nothing', async () => {
    const site = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Berlin', timezone: 'Europe/Berlin' },
    });
    expect(site.status).toBe(201);
    await enrollDevice(t.api, tenant, 'berlin-host', site.body.id);
    const automation = (
      await create({
        triggers: [
          { type: 'schedule', schedule: { rrule: 'FREQ=WEEKLY;BYDAY=SU;BYHOUR=2', start: '2026-01-04T02:00:00' } },
        ],
        actions: [{ type: 'raise-alert', severity: 'low', title: 'Sunday' }],
      })
    ).body;
    const occurrences = await t.api.request(
      'GET',
      `/api/v1/automations/${automation.id}/occurrences?from=2026-10-24T00:00:00Z&to=2026-10-26T00:00:00Z`,
      { token: tenant.orgToken },
    );
    expect(occurrences.status).toBe(200);
    const berlin = occurrences.body.schedules.find((s: { timezone: string }) => s.timezone === 'Europe/Berlin');
    expect(berlin).toMatchObject({ deviceLocal: true, deviceCount: 1 });
    expect(berlin.occurrences).toEqual([
      { key: '2026-10-25T02:00:00', local: '2026-10-25T02:00:00+02:00', utc: '2026-10-25T00:00:00.000Z' },
    ]);
    expect(occurrences.body.schedules.map((s: { timezone: string }) => s.timezone)).toContain('UTC');
    const job = {
      automationId: automation.id,
      version: 1,
      trigger: 0,
      zone: 'Europe/Berlin',
      key: '2026-10-25T02:00:00',
      at: Date.parse('2026-10-25T00:00:00Z'),
    };
    const now = new Date(job.at + 5000);
    expect(await runOccurrence(appDb(), job, now)).toBe('ran');
    expect(await runOccurrence(appDb(), job, now)).toBe('duplicate');
    expect(await runOccurrence(appDb(), job, new Date(job.at + 2 * 3_600_000))).toBe('misfired');
    const runs = await runsOf(automation.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.trigger).toMatchObject({
      type: 'schedule',
      timezone: 'Europe/Berlin',
      occurrence: '2026-10-25T02:00:00',
    });
    const run = await getRun(runs[0]!.id);
    expect(run.items.map((i: { hostname: string }) => i.hostname)).toEqual(['berlin-host']);
    const mine = await t.api.request('GET', `/api/v1/devices/${device.deviceId}/automations`, {
      token: tenant.orgToken,
    });
    const listed = mine.body.automations.find((a: { id: string }) => a.id === automation.id);
    expect(listed).toMatchObject({ origin: { type: 'organization' }, nextOccurrence: { timezone: 'UTC' } });
    // A zone new to its devices is armed by the write that brings it: an enrollment, a site's zone changed.
    const armed = async () =>
      (
        await t.db.admin.query<{ zone: string }>(
          'SELECT zone FROM automation_zones WHERE automation_id = :id::uuid AND version = 1 ORDER BY zone',
          { id: automation.id },
        )
      ).rows.map((row) => row.zone);
    expect(await armed()).toEqual(['Europe/Berlin', 'UTC']);
    const tokyo = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Tokyo', timezone: 'Asia/Tokyo' },
    });
    await enrollDevice(t.api, tenant, 'tokyo-host', tokyo.body.id);
    await eventually(async () => (await armed()).includes('Asia/Tokyo'));
    const moved = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}/sites/${tokyo.body.id}`, {
      token: tenant.orgToken,
      body: { timezone: 'America/Chicago' },
    });
    expect(moved.status).toBe(200);
    await eventually(async () => (await armed()).includes('America/Chicago'));
  });

  it('takes a signed webhook once: a replay, a bad signature or a stale timestamp is 401', async () => {
    const automation = (
      await create({
        triggers: [{ type: 'webhook' }],
        actions: [{ type: 'raise-alert', severity: 'low', title: 'Hook' }],
      })
    ).body;
    const rotated = await t.api.request('POST', `/api/v1/automations/${automation.id}/webhook-secret`, {
      token: tenant.orgToken,
    });
    expect(rotated.status).toBe(201);
    const { secret } = rotated.body;
    expect(
      (await t.api.request('GET', `/api/v1/automations/${automation.id}`, { token: tenant.orgToken })).body.webhook,
    ).toEqual({ url: `/api/v1/hooks/automations/${automation.id}`, hasSecret: true });
    const call = (body: string, timestamp: number, key = secret) =>
      t.api.request('POST', `/api/v1/hooks/automations/${automation.id}`, {
        rawBody: body,
        headers: {
          'content-type': 'application/json',
          'x-logbook-timestamp': String(timestamp),
          'x-logbook-signature': signature(key, String(timestamp), body),
        },
      });
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ deviceIds: [device.deviceId] });
    const first = await call(body, now);
    expect(first.status).toBe(202);
    expect(first.body.runs[0].items.map((i: { deviceId: string }) => i.deviceId)).toEqual([device.deviceId]);
    expect((await call(body, now)).status).toBe(401);
    expect((await call(body, now + 1, 'whsec_wrong')).status).toBe(401);
    expect((await call(body, now - 6 * 60)).status).toBe(401);
    expect(await runsOf(automation.id)).toHaveLength(1);
  });

  it('fans a partner automation out through a policy of kind automation, each run under its device organization', async () => {
    const second = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Initech West' },
    });
    const west = await enrollDevice(
      t.api,
      { ...tenant, orgId: second.body.id, orgToken: tenant.partnerToken },
      'west-host',
    );
    const automation = (
      await create(
        {
          orgId: undefined,
          availability: 'partner',
          actions: [{ type: 'raise-alert', severity: 'low', title: 'Fleet' }],
        },
        tenant.partnerToken,
      )
    ).body;
    expect(automation.availability).toBe('partner');
    const policy = await t.api.request('POST', '/api/v1/policies', {
      token: tenant.partnerToken,
      body: {
        kind: 'automation',
        name: 'Fleet automations',
        availability: 'partner',
        items: [{ key: 'fleet', type: 'automation', automationId: automation.id }],
      },
    });
    expect(policy.status).toBe(201);
    const badItem = await t.api.request('POST', '/api/v1/policies', {
      token: tenant.partnerToken,
      body: {
        kind: 'automation',
        name: 'Bad',
        availability: 'partner',
        items: [{ key: 'x', type: 'automation', automationId: randomUUID() }],
      },
    });
    expect(badItem.status).toBe(400);
    const assigned = await t.api.request('POST', `/api/v1/policies/${policy.body.id}/assignments`, {
      token: tenant.partnerToken,
      body: { level: 'partner', targetId: tenant.partnerId },
    });
    expect(assigned.status).toBe(201);
    const evaluated = await auditRowsOf(t.db.admin, 'automation.policy.evaluate', policy.body.id);
    expect(evaluated.map((row) => row.orgId).sort()).toEqual([tenant.orgId, second.body.id].sort());
    expect(evaluated[0]!.details.devices[0].added).toEqual([automation.id]);
    const reply = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
      token: tenant.partnerToken,
      body: {},
    });
    expect(reply.status).toBe(202);
    const byOrg = new Map<string, string[]>(
      reply.body.runs.map((run: { orgId: string; items: { deviceId: string }[] }) => [
        run.orgId,
        run.items.map((i) => i.deviceId),
      ]),
    );
    expect(byOrg.get(second.body.id)).toEqual([west.deviceId]);
    expect(byOrg.get(tenant.orgId)).toContain(device.deviceId);
    const westRun = reply.body.runs.find((run: { orgId: string }) => run.orgId === second.body.id);
    expect(
      (await t.api.request('GET', `/api/v1/automation-runs/${westRun.id}`, { token: tenant.orgToken })).status,
    ).toBe(404);
    const effective = await t.api.request('GET', `/api/v1/devices/${west.deviceId}/automations`, {
      token: tenant.partnerToken,
    });
    expect(effective.body.automations.find((a: { id: string }) => a.id === automation.id)).toMatchObject({
      availability: 'partner',
      origin: { type: 'policy', policyId: policy.body.id, level: 'partner' },
    });
    // An exemption of the item on a device takes the automation from it, deleting it brings it back; an inheritance
    // block of the organization keeps the partner's policy out; each evaluated in the transaction of the change.
    const evaluatedBy = async (key: string) =>
      (await auditRowsOf(t.db.admin, 'automation.policy.evaluate', policy.body.id)).filter((row) => key in row.details);
    const kiosks = await t.api.request('POST', `/api/v1/orgs/organizations/${second.body.id}/device-groups`, {
      token: tenant.partnerToken,
      body: { name: 'West kiosks', type: 'dynamic', filter: { field: 'hostname', op: 'equals', value: 'west-host' } },
    });
    expect(kiosks.status).toBe(201);
    const exemption = await t.api.request('POST', `/api/v1/policies/${policy.body.id}/exemptions`, {
      token: tenant.partnerToken,
      body: { itemKey: 'fleet', level: 'group', targetId: kiosks.body.id, reason: 'Kiosk' },
    });
    expect(exemption.status).toBe(201);
    // Fired meanwhile, the exempted device (a member of the dynamic group now) is not in the run; the others are.
    const whileExempted = await t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
      token: tenant.partnerToken,
      headers: { 'idempotency-key': randomUUID() },
      body: {},
    });
    expect(whileExempted.status).toBe(202);
    const ranOn = whileExempted.body.runs.flatMap((run: { items: { deviceId: string }[] }) =>
      run.items.map((item) => item.deviceId),
    );
    expect(ranOn).toContain(device.deviceId);
    expect(ranOn).not.toContain(west.deviceId);
    expect(
      (await t.api.request('DELETE', `/api/v1/policy-exemptions/${exemption.body.id}`, { token: tenant.partnerToken }))
        .status,
    ).toBe(204);
    const exempted = await evaluatedBy('exemptionId');
    expect(exempted.map((row) => row.details)).toEqual([
      expect.objectContaining({
        exemptionId: exemption.body.id,
        policyVersion: policy.body.version,
        devices: [{ deviceId: west.deviceId, added: [], removed: [automation.id] }],
        deviceCount: 1,
      }),
      expect.objectContaining({
        exemptionId: exemption.body.id,
        devices: [{ deviceId: west.deviceId, added: [automation.id], removed: [] }],
      }),
    ]);
    expect(exempted.every((row) => row.orgId === second.body.id)).toBe(true);
    const inheritance = (block: boolean) =>
      t.api.request('PUT', `/api/v1/orgs/organizations/${second.body.id}/policy-inheritance`, {
        token: tenant.partnerToken,
        body: { block },
      });
    expect((await inheritance(true)).status).toBe(200);
    expect((await inheritance(true)).status).toBe(200);
    expect((await inheritance(false)).status).toBe(200);
    const blocked = await evaluatedBy('block');
    expect(blocked.map((row) => [row.orgId, row.details])).toEqual([
      [
        second.body.id,
        expect.objectContaining({
          change: 'inheritance',
          level: 'organization',
          targetId: second.body.id,
          block: true,
          policyVersion: policy.body.version,
          devices: [{ deviceId: west.deviceId, added: [], removed: [automation.id] }],
        }),
      ],
      [
        second.body.id,
        expect.objectContaining({
          block: false,
          devices: [{ deviceId: west.deviceId, added: [automation.id], removed: [] }],
        }),
      ],
    ]);
    // Its items changed, the policy no longer brings the automation: evaluated in each organization, as a change.
    const changed = await t.api.request('PATCH', `/api/v1/policies/${policy.body.id}`, {
      token: tenant.partnerToken,
      body: { items: [] },
    });
    expect(changed.status).toBe(200);
    const removed = (await auditRowsOf(t.db.admin, 'automation.policy.evaluate', policy.body.id)).filter(
      (row) => row.details.change === 'items',
    );
    expect(removed.map((row) => row.orgId).sort()).toEqual([tenant.orgId, second.body.id].sort());
    expect(removed.find((row) => row.orgId === second.body.id)!.details).toMatchObject({
      policyVersion: changed.body.version,
      devices: [{ deviceId: west.deviceId, added: [], removed: [automation.id] }],
      deviceCount: 1,
    });
  });

  it('fires on device events told by the writes that cause them, each event once', async () => {
    const onEvent = async (event: string, extra: Record<string, unknown> = {}) =>
      (
        await create({
          triggers: [{ type: 'event', event, ...extra }],
          conditions: { field: 'hostname', op: 'startsWith', value: 'evt-' },
          actions: [{ type: 'set-custom-field', key: 'last_automation', value: event }],
        })
      ).body.id as string;
    expect(
      (
        await t.api.request('POST', '/api/v1/custom-fields', {
          token: tenant.partnerToken,
          body: { name: 'Last automation', key: 'last_automation', type: 'text' },
        })
      ).status,
    ).toBe(201);
    const ring = await t.api.request('POST', '/api/v1/custom-fields', {
      token: tenant.partnerToken,
      body: { name: 'Ring', key: 'ring', type: 'text' },
    });
    const enrolledId = await onEvent('device.enrolled');
    const onlineId = await onEvent('device.online');
    const offlineId = await onEvent('device.offline');
    const changedId = await onEvent('custom_field.changed', { filter: { key: 'ring', value: 'canary' } });
    const fresh = await enrollDevice(t.api, tenant, 'evt-host');
    await eventually(async () => (await runsOf(enrolledId)).length === 1);
    // Seen at enrollment; offline once not seen for the online window.
    await t.db.admin.query("UPDATE devices SET last_seen_at = now() - interval '10 minutes' WHERE id = :id::uuid", {
      id: fresh.deviceId,
    });
    const agent = await TestConnection.open(t.api, fresh.token);
    await eventually(async () => (await runsOf(onlineId)).length === 1);
    await agent.close();
    await eventually(async () => (await runsOf(offlineId)).length === 1);
    const put = (value: string) =>
      t.api.request('PUT', `/api/v1/devices/${fresh.deviceId}/custom-fields/ring`, {
        token: tenant.orgToken,
        body: { value },
      });
    expect((await put('stable')).status).toBe(200);
    expect((await put('canary')).status).toBe(200);
    await eventually(async () => (await runsOf(changedId)).length === 1);
    // Bulk writes and imports tell it too.
    const bulk = (value: string) =>
      t.api.request('PUT', `/api/v1/custom-fields/${ring.body.id}/values`, {
        token: tenant.orgToken,
        body: { values: [{ deviceId: fresh.deviceId, value }] },
      });
    expect((await bulk('stable')).status).toBe(200);
    expect((await bulk('canary')).status).toBe(200);
    await eventually(async () => (await runsOf(changedId)).length === 2);
    expect((await bulk('stable')).status).toBe(200);
    const imported = await t.api.request('POST', '/api/v1/custom-fields/import/values', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, sourceSystem: 'generic', csv: 'hostname,ring\nevt-host,canary\n' },
    });
    expect(imported.status).toBe(200);
    await eventually(async () => (await runsOf(changedId)).length === 3);
    const [run] = await runsOf(changedId);
    expect(run!.trigger).toMatchObject({ type: 'event', event: 'custom_field.changed' });
    expect((await getRun(run!.id)).items).toEqual([
      expect.objectContaining({ deviceId: fresh.deviceId, status: 'completed' }),
    ]);
    const enrolledRun = await getRun((await runsOf(enrolledId))[0]!.id);
    expect(enrolledRun.items.map((i: { deviceId: string }) => i.deviceId)).toEqual([fresh.deviceId]);
    // A device that matches no condition starts nothing.
    await enrollDevice(t.api, tenant, 'other-host');
    expect((await runsOf(enrolledId)).length).toBe(1);
  });

  it('evaluates device events received together: one run each, a repeated event once, the guards in event order', async () => {
    const automation = (
      await create({
        triggers: [{ type: 'event', event: 'device.online' }],
        conditions: { field: 'hostname', op: 'startsWith', value: 'batch-' },
        actions: [{ type: 'raise-alert', severity: 'low', title: 'Came online' }],
        guards: { maxRunsPerDevice: 2 },
      })
    ).body;
    const [a, b] = [await enrollDevice(t.api, tenant, 'batch-a'), await enrollDevice(t.api, tenant, 'batch-b')];
    const online = (eventId: string, deviceId: string) => ({
      kind: 'automations.event',
      event: 'device.online',
      eventId: `${automation.id}:${eventId}`,
      deviceId,
    });
    // One batch of the queue worker: three events of a, one of b, the first delivered twice.
    await runDeviceEventJobs([
      online('1', a.deviceId),
      online('2', a.deviceId),
      online('1', a.deviceId),
      online('3', a.deviceId),
      online('4', b.deviceId),
    ]);
    const runs = await runsOf(automation.id);
    expect(runs.map((r) => r.trigger.occurrenceKey).sort()).toEqual(
      ['1', '2', '3', '4'].map((id) => `event:${automation.id}:${id}`),
    );
    const items = await Promise.all(
      runs.map(async (r) => ({ key: r.trigger.occurrenceKey, ...(await getRun(r.id)).items[0] })),
    );
    const itemOf = (id: string) => items.find((i) => i.key === `event:${automation.id}:${id}`);
    expect(itemOf('1')).toMatchObject({ deviceId: a.deviceId, status: 'completed' });
    expect(itemOf('2')).toMatchObject({ deviceId: a.deviceId, status: 'completed' });
    expect(itemOf('3')).toMatchObject({ deviceId: a.deviceId, status: 'skipped', skipReason: 'loop-guard' });
    expect(itemOf('4')).toMatchObject({ deviceId: b.deviceId, status: 'completed' });
    expect((await auditRowsOf(t.db.admin, 'automation.run', automation.id)).length).toBe(4);
  });

  it("skips a device still running the automation's script when concurrency is skip", async () => {
    const busy = await enrollDevice(t.api, tenant, 'busy-host');
    const automation = (await create({})).body;
    const run = () =>
      t.api.request('POST', `/api/v1/automations/${automation.id}/run`, {
        token: tenant.orgToken,
        body: { deviceIds: [busy.deviceId] },
      });
    expect((await run()).body.runs[0].items[0]).toMatchObject({ status: 'running' });
    expect((await run()).body.runs[0].items[0]).toMatchObject({ status: 'skipped', skipReason: 'concurrency' });
  });
});
