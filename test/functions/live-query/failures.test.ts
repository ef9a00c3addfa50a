import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Agent } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { eventually, TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
});

let connections: TestConnection[] = [];
afterEach(async () => {
  delete process.env.LIVE_QUERY_TIMEOUT_MS;
  vi.restoreAllMocks();
  await Promise.all(connections.map((c) => c.close()));
  connections = [];
});

/** A freshly enrolled device whose agent connection the test drives. */
async function connectedDevice(hostname: string): Promise<{ agent: Agent; connection: TestConnection }> {
  const agent = await enrollDevice(t.api, tenant, hostname);
  const connection = await TestConnection.open(t.api, agent.token);
  connections.push(connection);
  return { agent, connection };
}

const ask = (deviceId: string, suffix = '/eventlogs/System') =>
  t.api.request('GET', `/api/v1/devices/${deviceId}${suffix}`, { token: tenant.orgToken });

const descriptor = {
  name: 'System',
  displayName: 'System',
  recordCount: 12,
  maxSize: 20971520,
  retentionDays: 0,
  lastWriteTime: '2026-03-01T10:00:00.000Z',
};

describe('a live query', () => {
  it("is relayed as { type, requestId, ...parameters } and answered with the agent's data", async () => {
    const { agent, connection } = await connectedDevice('relay-1');
    const reply = ask(
      agent.deviceId,
      '/eventlogs/Security/events?level=error&eventId=4625&page=2&limit=10&source=x&startTime=2026-03-01T00:00:00Z',
    );
    const query = await connection.next();
    expect(query).toEqual({
      type: 'eventlogs.events',
      requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Security',
      page: 2,
      limit: 10,
      level: 'error',
      source: 'x',
      startTime: '2026-03-01T00:00:00Z',
      eventId: 4625,
    });
    connection.send({ requestId: query.requestId, data: { events: [], total: 11 } });
    expect((await reply).body).toEqual({ data: [], pagination: { page: 2, limit: 10, total: 11, totalPages: 2 } });
  });

  it("drops fields of the agent's answer that the event shape does not name", async () => {
    const { agent, connection } = await connectedDevice('extra-1');
    const reply = ask(agent.deviceId);
    const query = await connection.next();
    connection.send({ requestId: query.requestId, data: { ...descriptor, secret: 'x' } });
    expect((await reply).body).toEqual(descriptor);
  });

  it('answers 409 DEVICE_OFFLINE for a device whose agent never connected', async () => {
    const agent = await enrollDevice(t.api, tenant, 'never-connected');
    const reply = await ask(agent.deviceId);
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('DEVICE_OFFLINE');
  });

  it('answers 409 DEVICE_OFFLINE once the agent disconnected', async () => {
    const { agent, connection } = await connectedDevice('gone-1');
    await connection.close();
    await eventually(
      async () =>
        (await t.db.admin.query('SELECT 1 FROM agent_connections WHERE device_id = :d::uuid', { d: agent.deviceId }))
          .rowCount === 0,
    );
    expect((await ask(agent.deviceId)).status).toBe(409);
  });

  it('forgets a stale connection that API Gateway calls gone and answers 409', async () => {
    const agent = await enrollDevice(t.api, tenant, 'stale-1');
    await t.db.admin.query(
      `INSERT INTO agent_connections (connection_id, agent_id, device_id, org_id, connected_at)
       VALUES ('stale=', :agentId::uuid, :deviceId::uuid, :orgId::uuid, now() - interval '1 hour')`,
      { agentId: agent.agentId, deviceId: agent.deviceId, orgId: tenant.orgId },
    );
    const reply = await ask(agent.deviceId);
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('DEVICE_OFFLINE');
    expect((await t.db.admin.query(`SELECT 1 FROM agent_connections WHERE connection_id = 'stale='`)).rowCount).toBe(0);
  });

  it('answers 504 AGENT_TIMEOUT when the agent does not answer in time, and ignores a later answer', async () => {
    process.env.LIVE_QUERY_TIMEOUT_MS = '600';
    const { agent, connection } = await connectedDevice('silent-1');
    const started = Date.now();
    const reply = await ask(agent.deviceId);
    expect(reply.status).toBe(504);
    expect(reply.body.error).toEqual({ code: 'AGENT_TIMEOUT', message: 'The agent did not answer within 0.6 seconds' });
    // Well before the 28-second default: the configured limit was the one applied.
    expect(Date.now() - started).toBeLessThan(14_000);
    const query = await connection.next();
    connection.send({ requestId: query.requestId, data: descriptor });
    // The query is gone: nothing is kept of the late answer.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await t.db.admin.query('SELECT count(*)::int AS n FROM live_requests')).rows[0]!.n).toBe(0);
    expect((await t.db.admin.query('SELECT count(*)::int AS n FROM live_request_chunks')).rows[0]!.n).toBe(0);
  });

  it("waits 28 seconds by default, below API Gateway's 30-second limit", async () => {
    const { defaultTimeoutMs } = await import('#shared/live-query/relay.ts');
    expect(defaultTimeoutMs).toBe(28_000);
  });

  it.each([
    ['an answer that is not JSON', (requestId: string) => `{"requestId":"${requestId}","data":{"name":`],
    [
      'data of the wrong shape',
      (requestId: string) => JSON.stringify({ requestId, data: { name: 'System', recordCount: 'many' } }),
    ],
    [
      'data that is text but no JSON',
      (requestId: string) => JSON.stringify({ requestId, data: 'System log, 12 records' }),
    ],
    ['no data at all', (requestId: string) => JSON.stringify({ requestId })],
    [
      'chunks that do not make JSON',
      (requestId: string) => JSON.stringify({ requestId, chunk: 0, chunks: 1, data: '{"requestId":' }),
    ],
    [
      'a chunk header that makes no sense',
      (requestId: string) => JSON.stringify({ requestId, chunk: 5, chunks: 2, data: '{}' }),
    ],
  ])('answers 502 AGENT_BAD_RESPONSE for %s, logging "Failed to parse agent response for event"', async (_, answer) => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const { agent, connection } = await connectedDevice(`bad-${Math.random().toString(36).slice(2, 8)}`);
    const reply = ask(agent.deviceId);
    const query = await connection.next();
    connection.send(answer(query.requestId!));
    const answered = await reply;
    expect(answered.status).toBe(502);
    expect(answered.body.error.code).toBe('AGENT_BAD_RESPONSE');
    expect(logged.mock.calls.map((call) => String(call[0]))).toContainEqual(
      expect.stringMatching(/^Failed to parse agent response for event eventlogs\.get/),
    );
  });

  it('reads data sent as JSON text', async () => {
    const { agent, connection } = await connectedDevice('text-1');
    const reply = ask(agent.deviceId);
    const query = await connection.next();
    connection.send({ requestId: query.requestId, data: JSON.stringify(descriptor) });
    expect((await reply).body).toEqual(descriptor);
  });

  it("answers 404 with the agent's message when the agent reports NOT_FOUND (or an error without a code)", async () => {
    const { agent, connection } = await connectedDevice('notfound-1');
    const first = ask(agent.deviceId, '/eventlogs/Nope');
    connection.send({
      requestId: (await connection.next()).requestId,
      error: { code: 'NOT_FOUND', message: 'Event log Nope does not exist' },
    });
    expect(await first).toMatchObject({
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: 'Event log Nope does not exist' } },
    });
    const second = ask(agent.deviceId, '/eventlogs/System/events/77');
    connection.send({ requestId: (await connection.next()).requestId, error: 'Record 77 was overwritten' });
    expect(await second).toMatchObject({
      status: 404,
      body: { error: { code: 'NOT_FOUND', message: 'Record 77 was overwritten' } },
    });
  });

  it('answers 502 when the agent reports another error', async () => {
    const { agent, connection } = await connectedDevice('denied-1');
    const reply = ask(agent.deviceId, '/eventlogs/Security');
    connection.send({
      requestId: (await connection.next()).requestId,
      error: { code: 'ACCESS_DENIED', message: 'The agent may not read the Security log' },
    });
    expect(await reply).toMatchObject({
      status: 502,
      body: {
        error: {
          code: 'AGENT_BAD_RESPONSE',
          message: 'The agent reported ACCESS_DENIED: The agent may not read the Security log',
        },
      },
    });
  });

  it('puts chunks together in chunk order, whatever order they arrive in', async () => {
    const { agent, connection } = await connectedDevice('chunks-1');
    const reply = ask(agent.deviceId);
    const { requestId } = await connection.next();
    const text = JSON.stringify({ requestId, data: descriptor });
    const pieces = [text.slice(0, 20), text.slice(20, 60), text.slice(60)];
    for (const chunk of [2, 0, 1]) connection.send({ requestId, chunk, chunks: 3, data: pieces[chunk] });
    expect((await reply).body).toEqual(descriptor);
  });

  it('ignores an answer from a connection that does not own the query', async () => {
    const { agent, connection } = await connectedDevice('owner-1');
    const { connection: intruder } = await connectedDevice('intruder-1');
    const reply = ask(agent.deviceId);
    const { requestId } = await connection.next();
    intruder.send({ requestId, data: { ...descriptor, displayName: 'forged' } });
    await new Promise((resolve) => setTimeout(resolve, 150));
    connection.send({ requestId, data: descriptor });
    expect((await reply).body).toEqual(descriptor);
  });
});
