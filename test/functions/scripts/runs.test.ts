import { beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, startSimulatedAgent, TestConnection } from '#test/support/live-agents.ts';
import { auditRowsOf, scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

// Items without an answer time out right at their script's timeout here.
process.env.SCRIPT_RUN_GRACE_SECONDS = '0';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let scriptId: string;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  const created = await t.api.request('POST', '/api/v1/scripts', {
    token: tenant.orgToken,
    body: {
      ...scriptBody({
        name: 'Check disk',
        parameters: [
          { name: 'days', type: 'number', required: true },
          { name: 'mode', type: 'select', choices: ['quick', 'full'], default: 'quick' },
          { name: 'password', type: 'string', secret: true },
          { name: 'exitCode', type: 'number' },
        ],
        exitCodeSeverityMapping: { '2': 'high', '3': 'none' },
      }),
      orgId: tenant.orgId,
    },
  });
  scriptId = created.body.id;
});

const startRun = (body: unknown, token = tenant.orgToken, id = scriptId) =>
  t.api.request('POST', `/api/v1/scripts/${id}/runs`, { token, body });
const items = async (runId: string, token = tenant.orgToken) =>
  (await t.api.request('GET', `/api/v1/script-runs/${runId}/items`, { token })).body.data as Record<string, any>[];
const runCount = async () => Number((await t.db.admin.query('SELECT count(*) AS n FROM script_runs')).rows[0]!.n);

describe('script runs', () => {
  it('checks parameter values against the declared types before anything is stored or sent', async () => {
    const device = await enrollDevice(t.api, tenant, 'param-host');
    const before = await runCount();
    for (const [parameters, path] of [
      [{}, 'body.parameters.days'],
      [{ days: 'seven' }, 'body.parameters.days'],
      [{ days: 7, mode: 'deep' }, 'body.parameters.mode'],
      [{ days: 7, color: 'red' }, 'body.parameters.color'],
    ] as const) {
      const reply = await startRun({ deviceIds: [device.deviceId], parameters });
      expect(reply.status, path).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    expect(await runCount()).toBe(before);
  });

  it("runs on a device group's members, and answers 404 for another tenant's group or device", async () => {
    const a = await enrollDevice(t.api, tenant, 'group-a');
    const b = await enrollDevice(t.api, tenant, 'group-b');
    await enrollDevice(t.api, tenant, 'not-in-group');
    const group = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: { name: 'Run targets', type: 'static' },
    });
    await t.api.request('POST', `/api/v1/device-groups/${group.body.id}/members`, {
      token: tenant.orgToken,
      body: { deviceIds: [a.deviceId, b.deviceId] },
    });
    const reply = await startRun({ groupId: group.body.id, parameters: { days: 1 } });
    expect(reply.status).toBe(202);
    expect((await items(reply.body.id)).map((item) => item.deviceId).sort()).toEqual([a.deviceId, b.deviceId].sort());
    const both = await startRun({ groupId: group.body.id, deviceIds: [a.deviceId], parameters: { days: 1 } });
    expect(both.status).toBe(400);
    const empty = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token: tenant.orgToken,
      body: { name: 'Empty', type: 'static' },
    });
    const none = await startRun({ groupId: empty.body.id, parameters: { days: 1 } });
    expect(none.status).toBe(400);
    expect(none.body.error.details[0]).toMatchObject({ path: 'body.groupId' });
    const theirs = await t.api.request('POST', `/api/v1/orgs/organizations/${other.orgId}/device-groups`, {
      token: other.orgToken,
      body: { name: 'Theirs', type: 'dynamic', filter: { field: 'hostname', op: 'contains', value: 'x' } },
    });
    expect((await startRun({ groupId: theirs.body.id, parameters: { days: 1 } })).status).toBe(404);
    const foreign = await enrollDevice(t.api, other, 'foreign');
    const refused = await startRun({ deviceIds: [foreign.deviceId], parameters: { days: 1 } });
    expect(refused.status).toBe(404);
    const script = await t.api.request('GET', `/api/v1/scripts/${scriptId}`, { token: other.orgToken });
    expect(script.status).toBe(404);
  });

  it('relays script.run to an online agent and records its answer, a script.execute row and no secret', async () => {
    const device = await enrollDevice(t.api, tenant, 'online-host');
    const agent = await TestConnection.open(t.api, device.token);
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 7, password: 's3cret!' } });
    expect(reply.status).toBe(202);
    expect(reply.body).toMatchObject({ scriptVersion: 1, parameters: { days: 7, mode: 'quick' }, deviceCount: 1 });
    expect(reply.body.secretParameters).toEqual(['password']);
    const message = await agent.next();
    expect(message).toMatchObject({
      type: 'script.run',
      language: 'powershell',
      content: 'Remove-Item $env:TEMP\\* -Recurse',
      parameters: { days: 7, mode: 'quick', password: 's3cret!' },
      timeoutSeconds: 300,
    });
    agent.send({ runItemId: message.runItemId, status: 'started' });
    await eventually(async () => (await items(reply.body.id))[0]!.status === 'running');
    agent.send({
      runItemId: message.runItemId,
      status: 'finished',
      exitCode: 0,
      stdout: 'ok',
      stderr: '',
      durationMs: 1234,
    });
    await eventually(async () => (await items(reply.body.id))[0]!.status === 'completed');
    const [item] = await items(reply.body.id);
    expect(item).toMatchObject({ deviceId: device.deviceId, exitCode: 0, durationMs: 1234, stdout: 'ok', error: null });
    const run = await t.api.request('GET', `/api/v1/script-runs/${reply.body.id}`, { token: tenant.orgToken });
    expect(run.body).toMatchObject({ done: true, counts: { completed: 1, pending: 0 } });
    routes['GET /api/v1/script-runs/{runId}'].response.parse(run.body);
    routes['GET /api/v1/script-runs/{runId}/items'].response.parse(
      (await t.api.request('GET', `/api/v1/script-runs/${reply.body.id}/items`, { token: tenant.orgToken })).body,
    );
    const rows = await auditRowsOf(t.db.admin, 'script.execute', scriptId);
    const row = rows.find((r) => r.details.runItemId === message.runItemId)!;
    expect(row).toMatchObject({ actorType: 'user', result: 'success', orgId: tenant.orgId });
    expect(row.details).toMatchObject({ deviceId: device.deviceId, version: 1, exitCode: 0, durationMs: 1234 });
    const stored = await t.db.admin.query(
      `SELECT (SELECT count(*) FROM audit_logs WHERE details::text LIKE '%s3cret!%') AS trail,
              (SELECT count(*) FROM script_runs WHERE parameters::text LIKE '%s3cret!%') AS runs,
              (SELECT count(*) FROM script_run_secrets) AS secrets`,
    );
    expect(stored.rows[0]).toEqual({ trail: 0, runs: 0, secrets: 0 });
    await agent.close();
  });

  it('keeps an offline device pending and delivers when its agent connects', async () => {
    const device = await enrollDevice(t.api, tenant, 'offline-host');
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 1, password: 'later' } });
    expect(reply.body.counts).toMatchObject({ pending: 1, sent: 0 });
    const agent = await TestConnection.open(t.api, device.token);
    const message = await agent.next();
    expect(message).toMatchObject({ type: 'script.run', parameters: { password: 'later' } });
    agent.send({ runItemId: message.runItemId, status: 'finished', exitCode: 0, stdout: '', stderr: '' });
    await eventually(async () => (await items(reply.body.id))[0]!.status === 'completed');
    await agent.close();
  });

  it('marks an item timed-out when no answer comes within its timeout', async () => {
    const device = await enrollDevice(t.api, tenant, 'slow-host');
    const agent = await TestConnection.open(t.api, device.token);
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 1 }, timeoutSeconds: 1 });
    const message = await agent.next();
    agent.send({ runItemId: message.runItemId, status: 'started' });
    await eventually(async () => (await items(reply.body.id))[0]!.status === 'timed-out', 5_000);
    agent.send({ runItemId: message.runItemId, status: 'finished', exitCode: 0 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await items(reply.body.id))[0]).toMatchObject({ status: 'timed-out', exitCode: null });
    const rows = await auditRowsOf(t.db.admin, 'script.execute', scriptId);
    expect(rows.filter((r) => r.details.runItemId === message.runItemId)).toMatchObject([
      { result: 'failure', details: { status: 'timed-out' } },
    ]);
    await agent.close();
  });

  it('puts a chunked answer together and cuts each output at 8,000 characters', async () => {
    const device = await enrollDevice(t.api, tenant, 'chatty-host');
    const agent = await TestConnection.open(t.api, device.token);
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 1 } });
    const { runItemId } = await agent.next();
    const text = JSON.stringify({
      runItemId,
      status: 'finished',
      exitCode: 0,
      stdout: 'é'.repeat(150_000),
      stderr: 'e',
    });
    // Pieces of 50,000 characters (100 KB of UTF-8) stay under the gateway's 128 KB, sent last first.
    const pieces = Array.from({ length: Math.ceil(text.length / 50_000) }, (_, i) =>
      text.slice(i * 50_000, (i + 1) * 50_000),
    );
    for (const chunk of [...pieces.keys()].reverse())
      agent.send({ runItemId, chunk, chunks: pieces.length, data: pieces[chunk] });
    await eventually(async () => (await items(reply.body.id))[0]!.status === 'completed');
    const [item] = await items(reply.body.id);
    expect(item!.stdout).toBe('é'.repeat(8_000));
    expect(item).toMatchObject({ stdoutTruncated: true, stderr: 'e', stderrTruncated: false });
    await agent.close();
  });

  it("ignores an answer for a run item that is not the agent's own", async () => {
    const target = await enrollDevice(t.api, tenant, 'target-host');
    const intruder = await enrollDevice(t.api, tenant, 'intruder-host');
    const agent = await TestConnection.open(t.api, target.token);
    const stranger = await TestConnection.open(t.api, intruder.token);
    const reply = await startRun({ deviceIds: [target.deviceId], parameters: { days: 1 } });
    const { runItemId } = await agent.next();
    stranger.send({ runItemId, status: 'finished', exitCode: 0, stdout: 'forged' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await items(reply.body.id))[0]).toMatchObject({ status: 'sent', stdout: null });
    await Promise.all([agent.close(), stranger.close()]);
  });

  it('cancels pending items; another tenant sees neither the run nor its items', async () => {
    const device = await enrollDevice(t.api, tenant, 'never-host');
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 1 } });
    expect((await t.api.request('GET', `/api/v1/script-runs/${reply.body.id}`, { token: other.orgToken })).status).toBe(
      404,
    );
    const cancelled = await t.api.request('POST', `/api/v1/script-runs/${reply.body.id}/cancel`, {
      token: tenant.orgToken,
    });
    expect(cancelled.body).toMatchObject({ done: true, counts: { cancelled: 1, pending: 0 } });
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await startRun({ deviceIds: [device.deviceId], parameters: { days: 1 } }, viewer)).status).toBe(403);
  });

  it('runs on the simulated agent, which honours the exitCode parameter', async () => {
    const device = await enrollDevice(t.api, tenant, 'sim-host');
    const agent = await startSimulatedAgent(t.api, device, 'SIM-HOST');
    const reply = await startRun({ deviceIds: [device.deviceId], parameters: { days: 1, exitCode: 3 } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    await eventually(async () => (await items(reply.body.id))?.[0]?.status === 'completed');
    expect((await items(reply.body.id))[0]).toMatchObject({
      exitCode: 3,
      stderr: 'Simulated failure with exit code 3\n',
    });
    await agent.stop();
  });
});
