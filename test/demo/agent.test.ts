import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '#demo/agent/agent.ts';
import { answerFrames, chunkBytes } from '#demo/agent/answer-frames.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('demo/agent/main.ts');
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
});

/** The simulated agent of an enrolled device on the test API, quiet: no event submissions, an hourly heartbeat. */
const quietAgent = (
  agent: { agentId: string; token: string },
  options: Partial<Parameters<typeof startAgent>[0]> = {},
) =>
  startAgent({
    server: t.api.url,
    wsUrl: t.api.wsUrl,
    agentId: agent.agentId,
    token: agent.token,
    store: generateEventStore({ computer: 'x' }),
    submitEvents: false,
    heartbeatSeconds: 3600,
    ...options,
  });

describe("the simulated agent's event store", () => {
  const anchor = new Date('2026-03-01T12:00:00Z');

  it('is the same for the same computer and anchor, and differs between computers', () => {
    const a = generateEventStore({ computer: 'WIN-A', anchor });
    expect(JSON.stringify(generateEventStore({ computer: 'WIN-A', anchor }).all())).toBe(JSON.stringify(a.all()));
    expect(
      generateEventStore({ computer: 'WIN-B', anchor }).events('Security', { page: 1, limit: 1 })!.events[0]!.recordId,
    ).not.toBe(a.events('Security', { page: 1, limit: 1 })!.events[0]!.recordId);
  });

  it('holds the logs and event ids of a Windows server, with rawXml in the Windows event schema', () => {
    const store = generateEventStore({ computer: 'WIN-A', anchor });
    expect(store.list().map((log) => log.name)).toEqual([
      'Application',
      'System',
      'Security',
      'Setup',
      'Microsoft-Windows-Sysmon/Operational',
    ]);
    const ids = (name: string) =>
      new Set(store.events(name, { page: 1, limit: 100_000 })!.events.map((e) => e.eventId));
    for (const id of [4624, 4625, 4634, 4672, 4688]) expect(ids('Security')).toContain(id);
    for (const id of [7036, 6005, 6006, 1074, 41, 6008]) expect(ids('System')).toContain(id);
    for (const id of [1000, 1001]) expect(ids('Application')).toContain(id);
    for (const id of [1, 2]) expect(ids('Setup')).toContain(id);
    for (const id of [1, 3, 22]) expect(ids('Microsoft-Windows-Sysmon/Operational')).toContain(id);
    const event = store.events('System', { page: 1, limit: 1, eventId: 7036 })!.events[0]!;
    expect(event.rawXml).toMatch(
      new RegExp(
        `^<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System><Provider Name="Service Control Manager" Guid="\\{[^}]+\\}" EventSourceName="Service Control Manager"/><EventID Qualifiers="16384">7036</EventID>.*<EventRecordID>${event.recordId}</EventRecordID>.*<Channel>System</Channel><Computer>WIN-A</Computer>.*</Event>$`,
      ),
    );
  });
});

describe("the simulated agent's chunks", () => {
  const answer = (text: string) => ({ requestId: '6f1c1b9e-2f55-4a4e-9a55-8d1f2f1b7c11', data: { text } });

  it('sends an answer that fits as one message', () => {
    expect(answerFrames(answer('small'))).toEqual([JSON.stringify(answer('small'))]);
  });

  it('cuts a larger one into chunks that each fit, even when escaping grows them, and never inside a character', () => {
    const text = `${'"quoted" \\ back'.repeat(20_000)}😀é${'<x a="1"/>'.repeat(20_000)}😀`;
    const frames = answerFrames(answer(text));
    expect(frames.length).toBeGreaterThan(4);
    for (const frame of frames) expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(chunkBytes);
    const chunks = frames.map((frame) => JSON.parse(frame) as { chunk: number; chunks: number; data: string });
    expect(chunks.map((c) => c.chunk)).toEqual(frames.map((_, i) => i));
    expect(chunks.every((c) => c.chunks === frames.length && !/[\uD800-\uDBFF]$/.test(c.data))).toBe(true);
    expect(JSON.parse(chunks.map((c) => c.data).join(''))).toEqual(answer(text));
  });
});

describe('the simulated agent', () => {
  it('heartbeats, posts diagnostic logs and submits its warnings and errors as stored event logs', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-REST');
    const store = generateEventStore({ computer: 'WIN-REST' });
    const running = startAgent({
      server: t.api.url,
      wsUrl: t.api.wsUrl,
      agentId: agent.agentId,
      token: agent.token,
      store,
      heartbeatSeconds: 0.2,
    });
    try {
      await running.connected();
      const get = (path: string) =>
        t.api.request('GET', `/api/v1/devices/${agent.deviceId}${path}`, { token: tenant.orgToken });
      await eventually(async () => (await get('/eventlogs?limit=1')).body.pagination.total === 500);
      await eventually(async () =>
        (await get('/diagnostic-logs')).body.data.some(
          (e: { message: string }) => e.message === 'Connected for live queries',
        ),
      );
      expect((await get('')).body).toMatchObject({ agentStatus: 'online', agentVersion: '2.4.1-sim' });
      const [stored] = (await get('/eventlogs?limit=1')).body.data;
      expect(stored).toMatchObject({
        eventId: expect.stringMatching(
          /^(Application|System|Security|Setup|Microsoft-Windows-Sysmon\/Operational):\d+$/,
        ),
        details: { recordId: expect.any(Number) },
      });
    } finally {
      await running.stop();
    }
  });

  it('heartbeats on its WebSocket connection while it is open, over HTTP before', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-WSBEAT');
    const posted: string[] = [];
    const fetched = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      posted.push(String(input));
      return fetched(input, init);
    };
    const running = quietAgent(agent);
    try {
      await running.connected();
      const seen = async () =>
        (await t.api.request('GET', `/api/v1/devices/${agent.deviceId}`, { token: tenant.orgToken })).body.lastSeenAt;
      const before = await seen();
      posted.length = 0;
      await running.checkIn();
      expect(Date.parse(await seen())).toBeGreaterThan(Date.parse(before));
      expect(posted.filter((url) => url.endsWith('/heartbeat'))).toEqual([]);
    } finally {
      globalThis.fetch = fetched;
      await running.stop();
    }
  });

  it('reconnects with backoff after its connection drops', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-RECONNECT');
    const running = quietAgent(agent);
    try {
      await running.connected();
      const rows = async () =>
        (
          await t.db.admin.query<{ id: string }>(
            'SELECT connection_id AS id FROM agent_connections WHERE device_id = :d::uuid',
            { d: agent.deviceId },
          )
        ).rows;
      const [first] = await rows();
      // API Gateway drops the connection (e.g. its two-hour limit): the agent comes back on a new one.
      await fetch(`${t.api.wsUrl.replace('ws:', 'http:')}/@connections/${encodeURIComponent(first!.id)}`, {
        method: 'DELETE',
      });
      await eventually(async () => {
        const now = await rows();
        return now.length === 1 && now[0]!.id !== first!.id;
      }, 5_000);
    } finally {
      await running.stop();
    }
  });

  it('stays off the channel when another connection of its agent replaces it', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-TWIN');
    const lines: string[] = [];
    const running = quietAgent(agent, {
      log: (line) => lines.push(line),
    });
    try {
      await running.connected();
      const twin = await TestConnection.open(t.api, agent.token);
      await eventually(() => lines.some((line) => line.includes('not reconnecting')));
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const reply = t.api.request('GET', `/api/v1/devices/${agent.deviceId}/eventlogs/System`, {
        token: tenant.orgToken,
      });
      const { requestId } = await twin.next();
      twin.send({ requestId, error: { code: 'NOT_FOUND', message: 'answered by the twin' } });
      expect((await reply).body.error.message).toBe('answered by the twin');
      await twin.close();
    } finally {
      await running.stop();
    }
  });

  it('with mayResume, takes the channel back once the other connection left', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-RESUME');
    const lines: string[] = [];
    const offline = async () =>
      (await t.db.admin.query('SELECT 1 FROM agent_connections WHERE device_id = :d::uuid', { d: agent.deviceId }))
        .rowCount === 0;
    const store = generateEventStore({ computer: 'WIN-RESUME' });
    const running = startAgent({
      server: t.api.url,
      wsUrl: t.api.wsUrl,
      agentId: agent.agentId,
      token: agent.token,
      store,
      submitEvents: false,
      heartbeatSeconds: 3600,
      mayResume: offline,
      resumeCheckMs: 100,
      log: (line) => lines.push(line),
    });
    try {
      await running.connected();
      const twin = await TestConnection.open(t.api, agent.token);
      await eventually(() => lines.some((line) => line.includes('not reconnecting while it is there')));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(lines.some((line) => line.includes('taking the live-query channel back'))).toBe(false);
      await twin.close();
      await eventually(() => lines.some((line) => line.includes('taking the live-query channel back')));
      await running.connected();
      const reply = await t.api.request('GET', `/api/v1/devices/${agent.deviceId}/eventlogs/System`, {
        token: tenant.orgToken,
      });
      expect(reply.body).toEqual(store.get('System'));
    } finally {
      await running.stop();
    }
  });

  it('from the command line, enrolls once and reuses agent.yaml on the next run', async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
      body: {},
    });
    const state = join(mkdtempSync(join(tmpdir(), 'logbook-agent-')), 'agent.yaml');
    const run = (extra: string[]) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          cli.args(['--url', t.api.url, '--ws-url', t.api.wsUrl, '--state', state, ...extra]),
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        const watch = setInterval(() => {
          if (!output.includes('connected for live queries')) return;
          clearInterval(watch);
          child.kill('SIGINT');
        }, 50);
        child.once('exit', (code) => {
          clearTimeout(timer);
          clearInterval(watch);
          if (code === 0) resolve(output);
          else reject(new Error(`agent exited ${code}:\n${output}`));
        });
      });
    const first = await run(['--enrollment-key', key.body.key, '--hostname', 'WIN-CLI']);
    expect(first).toMatch(/enrolled as WIN-CLI: agent [0-9a-f-]{36}/);
    expect(readFileSync(state, 'utf8')).toMatch(/^token: "lba_/m);
    const second = await run(['--enrollment-key', key.body.key]);
    expect(second).toContain('not enrolling again');
    const devices = await t.api.request('GET', '/api/v1/devices?search=WIN-CLI', { token: tenant.orgToken });
    expect(devices.body.data).toHaveLength(1);
  }, 60_000);
});
