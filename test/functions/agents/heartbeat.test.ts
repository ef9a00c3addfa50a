import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { type Agent, agentCall } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
  // The gateway runs in this process: proxy headers name the agent's source IP.
  process.env.TRUST_PROXY_HEADERS = 'true';
});
afterAll(() => {
  delete process.env.TRUST_PROXY_HEADERS;
});

const beat = (agent: Agent, ip: string, body: unknown = {}) =>
  agentCall(t.api, agent, 'POST', '/heartbeat', body, { headers: { 'x-forwarded-for': ip } });

const device = async (agent: Agent) =>
  (await t.api.request('GET', `/api/v1/devices/${agent.deviceId}`, { token: tenant.orgToken })).body;

const auditRows = (agent: Agent) =>
  t.db.admin
    .query<Record<string, unknown>>(
      `SELECT action, actor_type::text AS "actorType", actor_id AS "actorId", resource_type AS "resourceType", resource_id AS "resourceId",
              resource_name AS "resourceName", ip_address AS "ipAddress", details
         FROM audit_logs WHERE resource_id = :id::uuid AND action <> 'device.create' ORDER BY seq`,
      { id: agent.deviceId },
    )
    .then((r) => r.rows);

/** Resolves once `count` sessions of this database wait for a row lock. */
async function waitForLockWaiters(count: number) {
  // Polled until they wait; the test's timeout bounds it.
  for (;;) {
    const { rows } = await t.db.admin.query<{ n: number }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (rows[0]!.n >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('POST /api/v1/agents/{id}/heartbeat', () => {
  it('records when the device was last seen, its source IP, agent version, status and role', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-1');
    const before = await device(agent);
    const reply = await beat(agent, '203.0.113.10', { agentVersion: '2.5.0', status: 'degraded', role: 'server' });
    expect(reply.status).toBe(200);
    // An agent without a WebSocket connection is asked for a heartbeat every minute.
    expect(reply.body).toEqual({
      ok: true,
      serverTime: expect.any(String),
      configVersion: expect.any(String),
      heartbeatSeconds: 60,
    });
    const after = await device(agent);
    expect(after).toMatchObject({
      lastIp: '203.0.113.10',
      agentVersion: '2.5.0',
      agentStatus: 'degraded',
      role: 'server',
    });
    expect(Date.parse(after.lastSeenAt)).toBeGreaterThan(Date.parse(before.lastSeenAt));
    expect(after.lastSeenAt).toBe(reply.body.serverTime);
  });

  it('keeps the agent version and status when a heartbeat leaves them out, and accepts no body at all', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-2');
    await beat(agent, '203.0.113.11', { agentVersion: '2.5.0', status: 'maintenance' });
    const reply = await t.api.request('POST', `/api/v1/agents/${agent.agentId}/heartbeat`, {
      token: agent.token,
      headers: { 'x-forwarded-for': '203.0.113.11' },
    });
    expect(reply.status).toBe(200);
    expect(await device(agent)).toMatchObject({ agentVersion: '2.5.0', agentStatus: 'maintenance' });
  });

  it('refuses a status outside online, degraded, maintenance with 400, and drops fields it does not know', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-3');
    const bad = await beat(agent, '203.0.113.12', { status: 'on fire' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe('body.status');
    expect((await beat(agent, '203.0.113.12', { status: 'online', uptimeSeconds: 12 })).status).toBe(200);
  });

  it('writes no audit row while the source IP stays the same, nor for the first IP a device reports', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-4');
    for (let i = 0; i < 3; i++) await beat(agent, '198.51.100.4');
    expect(await auditRows(agent)).toEqual([]);
  });

  it('writes agent.source.ip.changed with the old and new IP when the source IP changes', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-5');
    await beat(agent, '198.51.100.5');
    await beat(agent, '198.51.100.6');
    await beat(agent, '198.51.100.6');
    await beat(agent, '2001:db8::5');
    expect(await auditRows(agent)).toEqual([
      {
        action: 'agent.source.ip.changed',
        actorType: 'agent',
        actorId: agent.agentId,
        resourceType: 'device',
        resourceId: agent.deviceId,
        resourceName: 'beat-5',
        ipAddress: '198.51.100.6',
        details: { previousIp: '198.51.100.5', ip: '198.51.100.6', actor: { name: 'beat-5', role: null } },
      },
      expect.objectContaining({
        ipAddress: '2001:db8::5',
        details: expect.objectContaining({ previousIp: '198.51.100.6', ip: '2001:db8::5' }),
      }),
    ]);
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('reports a change exactly once when heartbeats from the new IP arrive at the same time', async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-6');
    await beat(agent, '192.0.2.1');
    // Hold the device row so that all eight reach the database before any of them writes.
    let beats: Promise<Awaited<ReturnType<typeof beat>>[]> | undefined;
    await t.db.admin.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM devices WHERE id = :id::uuid FOR UPDATE', { id: agent.deviceId });
      beats = Promise.all(Array.from({ length: 8 }, () => beat(agent, '192.0.2.2')));
      await waitForLockWaiters(8);
    });
    const replies = await beats!;
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect((await auditRows(agent)).map((r) => r.details)).toEqual([
      expect.objectContaining({ previousIp: '192.0.2.1', ip: '192.0.2.2' }),
    ]);
  });

  it("uses the connection's address when proxy headers are not trusted", async () => {
    const agent = await enrollDevice(t.api, tenant, 'beat-7');
    delete process.env.TRUST_PROXY_HEADERS;
    try {
      await beat(agent, '203.0.113.99');
      expect((await device(agent)).lastIp).toBe('127.0.0.1');
    } finally {
      process.env.TRUST_PROXY_HEADERS = 'true';
    }
  });
});

describe("heartbeat on the agent's WebSocket connection", () => {
  /** Connects the agent as if through a proxy naming `ip`: the connection's source IP is what $connect saw. */
  const connect = (agent: Agent, ip: string) =>
    TestConnection.open(t.api, agent.token, 'header', { 'x-forwarded-for': ip });

  const wsBeat = async (connection: TestConnection, body: Record<string, unknown> = {}) => {
    connection.send({ type: 'heartbeat', ...body });
    return connection.next();
  };

  it('answers heartbeat.ack with what the HTTP heartbeat answers, and records the same fields', async () => {
    const agent = await enrollDevice(t.api, tenant, 'wsbeat-1');
    const http = await beat(agent, '203.0.113.40');
    const connection = await connect(agent, '203.0.113.40');
    try {
      const before = await device(agent);
      const ack = await wsBeat(connection, { agentVersion: '3.0.0', status: 'degraded', role: 'server' });
      const { type, ...carried } = ack;
      expect(type).toBe('heartbeat.ack');
      expect(Object.keys(carried).sort()).toEqual(Object.keys(http.body).sort());
      // The connection keeps the device online: the agent is asked for news every 15 minutes, against every minute
      // over HTTP.
      expect(carried).toEqual({
        ok: true,
        serverTime: expect.any(String),
        configVersion: http.body.configVersion,
        heartbeatSeconds: 900,
      });
      expect(http.body.heartbeatSeconds).toBe(60);
      const after = await device(agent);
      expect(after).toMatchObject({ agentVersion: '3.0.0', agentStatus: 'degraded', role: 'server' });
      expect(Date.parse(after.lastSeenAt)).toBeGreaterThan(Date.parse(before.lastSeenAt));
      expect(after.lastSeenAt).toBe(carried.serverTime);
      // Every heartbeat advances it.
      const again = await wsBeat(connection);
      expect(Date.parse(again.serverTime)).toBeGreaterThan(Date.parse(carried.serverTime));
      expect((await device(agent)).lastSeenAt).toBe(again.serverTime);
    } finally {
      await connection.close();
    }
  });

  it('takes the source IP from $connect: a change between the HTTP and the WebSocket heartbeat is audited once', async () => {
    const agent = await enrollDevice(t.api, tenant, 'wsbeat-2');
    await beat(agent, '198.51.100.40');
    const connection = await connect(agent, '198.51.100.41');
    try {
      expect((await wsBeat(connection)).type).toBe('heartbeat.ack');
      expect((await wsBeat(connection)).type).toBe('heartbeat.ack');
      expect((await device(agent)).lastIp).toBe('198.51.100.41');
      await beat(agent, '198.51.100.42');
      expect(await auditRows(agent)).toEqual([
        expect.objectContaining({
          action: 'agent.source.ip.changed',
          actorType: 'agent',
          actorId: agent.agentId,
          ipAddress: '198.51.100.41',
          details: expect.objectContaining({ previousIp: '198.51.100.40', ip: '198.51.100.41' }),
        }),
        expect.objectContaining({
          ipAddress: '198.51.100.42',
          details: expect.objectContaining({ previousIp: '198.51.100.41', ip: '198.51.100.42' }),
        }),
      ]);
      expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
    } finally {
      await connection.close();
    }
  });

  it('records heartbeats of many connections sent at once, each acknowledged with its own device as stored', async () => {
    const agents = await Promise.all(
      ['wsbatch-1', 'wsbatch-2', 'wsbatch-3'].map((name) => enrollDevice(t.api, tenant, name)),
    );
    const connections = await Promise.all(agents.map((agent, i) => connect(agent, `198.51.100.${60 + i}`)));
    try {
      const acks = await Promise.all(
        connections.map((connection, i) => wsBeat(connection, { agentVersion: `3.1.${i}`, status: 'online' })),
      );
      for (const [i, agent] of agents.entries()) {
        expect(acks[i]).toMatchObject({ type: 'heartbeat.ack', ok: true, heartbeatSeconds: 900 });
        expect(await device(agent)).toMatchObject({
          agentVersion: `3.1.${i}`,
          agentStatus: 'online',
          lastSeenAt: acks[i]!.serverTime,
          lastIp: `198.51.100.${60 + i}`,
        });
      }
      // Two heartbeats of one connection together: both answered, the later's fields kept over the earlier's.
      connections[0]!.send({ type: 'heartbeat', agentVersion: '3.2.0', status: 'degraded' });
      connections[0]!.send({ type: 'heartbeat', status: 'maintenance' });
      const [first, second] = [await connections[0]!.next(), await connections[0]!.next()];
      expect([first.type, second.type]).toEqual(['heartbeat.ack', 'heartbeat.ack']);
      expect(await device(agents[0]!)).toMatchObject({ agentVersion: '3.2.0', agentStatus: 'maintenance' });
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }
  });

  it('answers a heartbeat on the connection of a revoked agent UNAUTHENTICATED, and stores nothing', async () => {
    const agent = await enrollDevice(t.api, tenant, 'wsbeat-revoked');
    const connection = await connect(agent, '192.0.2.70');
    try {
      const before = await device(agent);
      await t.db.admin.query('UPDATE agents SET revoked_at = now() WHERE id = :id::uuid', { id: agent.agentId });
      expect(await wsBeat(connection, { agentVersion: '9.9.9' })).toMatchObject({
        type: 'error',
        inReplyTo: 'heartbeat',
        error: { code: 'UNAUTHENTICATED' },
      });
      const { rows } = await t.db.admin.query<{ lastSeenAt: Date; agentVersion: string | null }>(
        'SELECT last_seen_at AS "lastSeenAt", agent_version AS "agentVersion" FROM devices WHERE id = :id::uuid',
        { id: agent.deviceId },
      );
      expect(rows[0]!.lastSeenAt.toISOString()).toBe(before.lastSeenAt);
      expect(rows[0]!.agentVersion).not.toBe('9.9.9');
    } finally {
      await connection.close();
    }
  });

  it('answers an invalid heartbeat with an error naming the field, and stores nothing', async () => {
    const agent = await enrollDevice(t.api, tenant, 'wsbeat-3');
    await beat(agent, '192.0.2.40', { status: 'online' });
    const connection = await connect(agent, '192.0.2.40');
    try {
      const before = await device(agent);
      const reply = await wsBeat(connection, { status: 'on fire' });
      expect(reply).toMatchObject({
        type: 'error',
        inReplyTo: 'heartbeat',
        error: { code: 'VALIDATION_FAILED', message: expect.stringContaining('status') },
      });
      expect(reply.error.details[0].path).toBe('status');
      expect(await device(agent)).toMatchObject({
        lastSeenAt: before.lastSeenAt,
        lastIp: '192.0.2.40',
        agentStatus: 'online',
      });
      expect(await auditRows(agent)).toEqual([]);
    } finally {
      await connection.close();
    }
  });
});
