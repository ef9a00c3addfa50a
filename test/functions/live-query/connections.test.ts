import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '#functions/queue/jobs.ts';
import { handler as defaultHandler } from '#functions/ws/default.ts';
import { appDb } from '#shared/db/client.ts';
import type { WebSocketEvent } from '#shared/http/ws-handler.ts';
import { presenceJobKind, runPresenceJob } from '#shared/live-query/connections.ts';
import { type Job, runJobsLocally } from '#shared/queue/work-queue.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, startSimulatedAgent, TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;

/** The background jobs this file's requests queued, as they ran (device events, presence checks). */
const ran: Job[] = [];
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  runJobsLocally(async (job) => {
    ran.push(job);
    await runJob(job);
  });
});
afterAll(() => runJobsLocally(runJob));
const deviceEvents = (deviceId: string) =>
  ran
    .filter((j) => j.kind === 'automations.event' && j.deviceId === deviceId && j.event !== 'device.enrolled')
    .map((j) => j.event as string);
const withGrace = async (seconds: number, work: () => Promise<void>) => {
  const before = process.env.PRESENCE_GRACE_SECONDS;
  process.env.PRESENCE_GRACE_SECONDS = String(seconds);
  try {
    await work();
  } finally {
    process.env.PRESENCE_GRACE_SECONDS = before;
  }
};

let opened: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(opened.map((c) => c.close()));
  opened = [];
});

async function open(token: string | undefined, via: 'header' | 'query' = 'header') {
  const connection = await TestConnection.open(t.api, token, via);
  opened.push(connection);
  return connection;
}

const ask = (deviceId: string, suffix = '/eventlogs/System') =>
  t.api.request('GET', `/api/v1/system-tools/devices/${deviceId}${suffix}`, { token: tenant.orgToken });
const connectionsOf = async (deviceId: string) =>
  (
    await t.db.admin.query<{ connectionId: string }>(
      'SELECT connection_id AS "connectionId" FROM agent_connections WHERE device_id = :deviceId::uuid',
      { deviceId },
    )
  ).rows;

/** The $default function invoked as API Gateway invokes it for a message of `connectionId`. */
const defaultRoute = (connectionId: string, body: string) =>
  defaultHandler(
    {
      requestContext: { routeKey: '$default', eventType: 'MESSAGE', connectionId },
      body,
      isBase64Encoded: false,
    } as WebSocketEvent,
    {} as never,
  );

const descriptor = (displayName: string) => ({
  name: 'System',
  displayName,
  recordCount: 1,
  maxSize: 1024,
  retentionDays: 0,
  lastWriteTime: '2026-03-01T10:00:00.000Z',
});

describe('$connect', () => {
  it('refuses a missing, unknown or malformed token with 401', async () => {
    await expect(open(undefined)).rejects.toMatchObject({ status: 401 });
    await expect(open('lba_not-a-real-token')).rejects.toMatchObject({ status: 401 });
    await expect(open('lba_not-a-real-token', 'query')).rejects.toMatchObject({ status: 401 });
  });

  it('refuses the token of a deleted device with 401', async () => {
    const agent = await enrollDevice(t.api, tenant, 'deleted-1');
    expect(
      (await t.api.request('DELETE', `/api/v1/devices/${agent.deviceId}`, { token: tenant.orgToken })).status,
    ).toBe(204);
    await expect(open(agent.token)).rejects.toMatchObject({ status: 401 });
  });

  it('takes the token as a query parameter from clients that cannot set headers', async () => {
    const agent = await enrollDevice(t.api, tenant, 'query-token-1');
    const connection = await open(agent.token, 'query');
    const reply = ask(agent.deviceId);
    const { requestId } = await connection.next();
    connection.send({ requestId, data: descriptor('via query') });
    expect((await reply).body.displayName).toBe('via query');
  });

  it("records the connection for the agent's device, and $disconnect forgets it", async () => {
    const agent = await enrollDevice(t.api, tenant, 'record-1');
    const connection = await open(agent.token);
    const [row] = (
      await t.db.admin.query(
        'SELECT agent_id AS "agentId", org_id AS "orgId", source_ip AS "sourceIp" FROM agent_connections WHERE device_id = :d::uuid',
        { d: agent.deviceId },
      )
    ).rows;
    expect(row).toEqual({ agentId: agent.agentId, orgId: tenant.orgId, sourceIp: '127.0.0.1' });
    await connection.close();
    await eventually(async () => (await connectionsOf(agent.deviceId)).length === 0);
  });
});

describe('presence from the connection', () => {
  const device = async (deviceId: string) =>
    (await t.api.request('GET', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken })).body;
  const silence = (deviceId: string, minutes: number) =>
    t.db.admin.query(`UPDATE devices SET last_seen_at = now() - make_interval(mins => :m::int) WHERE id = :id::uuid`, {
      id: deviceId,
      m: minutes,
    });

  it('brings a device online at $connect and keeps it online between heartbeats; offline once closed, after the grace', async () => {
    const agent = await enrollDevice(t.api, tenant, 'presence-1');
    await silence(agent.deviceId, 10);
    expect(await device(agent.deviceId)).toMatchObject({ online: false });
    const connection = await open(agent.token);
    await eventually(() => deviceEvents(agent.deviceId).includes('device.online'));
    const connected = await device(agent.deviceId);
    // $connect is seen: last seen advances to it.
    expect(Date.now() - Date.parse(connected.lastSeenAt)).toBeLessThan(60_000);
    // Long after its last heartbeat, the connection alone keeps it online, in the reply and in a group filter.
    await silence(agent.deviceId, 30);
    expect(await device(agent.deviceId)).toMatchObject({ online: true });
    const filter = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups/preview`, {
      token: tenant.orgToken,
      body: { filter: { field: 'online', op: 'equals', value: true } },
    });
    expect(filter.status).toBe(200);
    expect(JSON.stringify(filter.body)).toContain(agent.deviceId);
    await connection.close();
    opened = opened.filter((c) => c !== connection);
    await eventually(() => deviceEvents(agent.deviceId).includes('device.offline'));
    expect(deviceEvents(agent.deviceId)).toEqual(['device.online', 'device.offline']);
    // Closed: last seen is when it closed.
    const closed = await device(agent.deviceId);
    expect(Date.now() - Date.parse(closed.lastSeenAt)).toBeLessThan(60_000);
  });

  it('arms the offline check for the grace: a device back within it is not told offline, one still away is', async () => {
    const agent = await enrollDevice(t.api, tenant, 'presence-2');
    await silence(agent.deviceId, 10);
    const first = await open(agent.token);
    await eventually(() => deviceEvents(agent.deviceId).includes('device.online'));
    const [{ connectionId }] = (await connectionsOf(agent.deviceId)) as [{ connectionId: string }];
    await withGrace(3600, async () => {
      await first.close();
      opened = opened.filter((c) => c !== first);
      await eventually(async () => (await connectionsOf(agent.deviceId)).length === 0);
      const closedAt = (await device(agent.deviceId)).lastSeenAt as string;
      expect(await device(agent.deviceId)).toMatchObject({ online: true });
      // Back within the grace: neither online again nor offline when the check comes due.
      const second = await open(agent.token);
      await runPresenceJob(appDb(), { kind: presenceJobKind, deviceId: agent.deviceId, connectionId, closedAt });
      expect(deviceEvents(agent.deviceId)).toEqual(['device.online']);
      // Away past the grace: told offline once, when its check comes due.
      const [{ connectionId: secondId }] = (await connectionsOf(agent.deviceId)) as [{ connectionId: string }];
      await second.close();
      opened = opened.filter((c) => c !== second);
      await eventually(async () => (await connectionsOf(agent.deviceId)).length === 0);
      const job = {
        kind: presenceJobKind,
        deviceId: agent.deviceId,
        connectionId: secondId,
        closedAt: (await device(agent.deviceId)).lastSeenAt as string,
      } as const;
      expect(deviceEvents(agent.deviceId)).toEqual(['device.online']);
      await runPresenceJob(appDb(), job);
      await eventually(() => deviceEvents(agent.deviceId).includes('device.offline'));
      expect(deviceEvents(agent.deviceId)).toEqual(['device.online', 'device.offline']);
    });
  });
});

describe('a second connection of the same agent', () => {
  it('replaces the first, which is told so and closed; queries go to the second', async () => {
    const agent = await enrollDevice(t.api, tenant, 'replace-1');
    const first = await open(agent.token);
    const [before] = await connectionsOf(agent.deviceId);
    const second = await open(agent.token);
    expect(await first.next()).toEqual({ type: 'connection.replaced' });
    expect((await first.closed).code).toBe(1000);
    const after = await connectionsOf(agent.deviceId);
    expect(after).toHaveLength(1);
    expect(after[0]!.connectionId).not.toBe(before!.connectionId);

    const reply = ask(agent.deviceId);
    const { requestId } = await second.next();
    second.send({ requestId, data: descriptor('second') });
    expect((await reply).body.displayName).toBe('second');
  });

  it("takes over a query asked before it connected: the query is sent again on it, and the old connection's late answer is ignored", async () => {
    const agent = await enrollDevice(t.api, tenant, 'reconnect-1');
    const old = await open(agent.token);
    const [{ connectionId: oldId }] = (await connectionsOf(agent.deviceId)) as [{ connectionId: string }];
    const reply = ask(agent.deviceId);
    const asked = await old.next();
    // The agent reconnects mid-request (a network change, say).
    const renewed = await open(agent.token);
    const again = await renewed.next();
    expect(again).toEqual(asked);
    // A message the old connection sent before it closed, delivered late by API Gateway.
    const late = await defaultRoute(
      oldId,
      JSON.stringify({ requestId: asked.requestId, data: descriptor('old connection') }),
    );
    expect(late).toEqual({ statusCode: 200 });
    await new Promise((resolve) => setTimeout(resolve, 150));
    renewed.send({ requestId: again.requestId, data: descriptor('new connection') });
    expect((await reply).body.displayName).toBe('new connection');
  });

  it('answers a query that was waiting while the agent was away, once it is back within the timeout', async () => {
    const agent = await enrollDevice(t.api, tenant, 'away-1');
    const first = await open(agent.token);
    const reply = ask(agent.deviceId);
    await first.next();
    await first.close();
    await eventually(async () => (await connectionsOf(agent.deviceId)).length === 0);
    const back = await open(agent.token);
    const { requestId } = await back.next();
    back.send({ requestId, data: descriptor('back again') });
    expect((await reply).body.displayName).toBe('back again');
  });
});

describe('several agents', () => {
  it('answer queries asked of them at the same time, each its own', async () => {
    const [a, b] = [await enrollDevice(t.api, tenant, 'WIN-A'), await enrollDevice(t.api, tenant, 'WIN-B')];
    const agentA = await startSimulatedAgent(t.api, a, 'WIN-A');
    const agentB = await startSimulatedAgent(t.api, b, 'WIN-B');
    opened.push({ close: agentA.stop }, { close: agentB.stop });
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ask(i % 2 === 0 ? a.deviceId : b.deviceId, `/eventlogs/Security/events?limit=${i + 1}`),
      ),
    );
    replies.forEach((reply, i) => {
      expect(reply.status).toBe(200);
      expect(reply.body.data).toHaveLength(i + 1);
      expect(reply.body.data.every((e: { computer: string }) => e.computer === (i % 2 === 0 ? 'WIN-A' : 'WIN-B'))).toBe(
        true,
      );
    });
  });
});
