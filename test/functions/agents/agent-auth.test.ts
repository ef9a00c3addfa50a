import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Agent, agentCall, deviceEvent, logEntry } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let agent: Agent;
let neighbour: Agent;
let foreign: Agent;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  agent = await enrollDevice(t.api, tenant, 'auth-1');
  neighbour = await enrollDevice(t.api, tenant, 'auth-2');
  foreign = await enrollDevice(t.api, other, 'auth-3');
});

/** Each agent route with a body it accepts. */
const calls = [
  ['POST', '/heartbeat', () => ({ agentVersion: '2.4.1' })],
  ['POST', '/logs', () => ({ logs: [logEntry(0)] })],
  ['PUT', '/eventlogs', () => ({ events: [deviceEvent(Math.random())] })],
] as const;

const stored = async (deviceId: string) => {
  const { rows } = await t.db.admin.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM agent_logs WHERE device_id = :id::uuid) + (SELECT count(*) FROM device_event_logs WHERE device_id = :id::uuid) AS n`,
    { id: deviceId },
  );
  return Number(rows[0]!.n);
};

describe.each(calls)('%s /api/v1/agents/{id}%s', (method, suffix, body) => {
  it("accepts the agent's own token for its own id", async () => {
    const reply = await agentCall(t.api, agent, method, suffix, body());
    expect(reply.status).toBeLessThan(300);
  });

  it('is 401 without a token, with a user token, or with a made-up one', async () => {
    for (const token of [null, tenant.orgToken, 'lba_not-a-real-token']) {
      const reply = await agentCall(t.api, agent, method, suffix, body(), { token });
      expect(reply.status, String(token)).toBe(401);
      expect(reply.body.error.code).toBe('UNAUTHENTICATED');
    }
  });

  it("is 403 for another agent's id, of the same organization or another, and stores nothing for it", async () => {
    for (const target of [neighbour, foreign]) {
      const reply = await agentCall(t.api, agent, method, suffix, body(), { agentId: target.agentId });
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('FORBIDDEN');
      expect(await stored(target.deviceId)).toBe(0);
    }
  });

  it('is 404 for an id no agent has', async () => {
    const reply = await agentCall(t.api, agent, method, suffix, body(), { agentId: randomUUID() });
    expect(reply.status).toBe(404);
    expect(reply.body.error.code).toBe('NOT_FOUND');
  });

  it('is 400 for an id that is no UUID', async () => {
    const reply = await agentCall(t.api, agent, method, suffix, body(), { agentId: 'not-a-uuid' });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('params.id');
  });
});

describe('a revoked agent token', () => {
  it('is 401 on every agent route once its device is deleted', async () => {
    const gone = await enrollDevice(t.api, tenant, 'auth-deleted');
    expect((await t.api.request('DELETE', `/api/v1/devices/${gone.deviceId}`, { token: tenant.orgToken })).status).toBe(
      204,
    );
    for (const [method, suffix, body] of calls) {
      expect((await agentCall(t.api, gone, method, suffix, body())).status, suffix).toBe(401);
    }
  });

  it("is 401 once the agent is revoked in the database, and the revoked agent's id is then 404 to others", async () => {
    const revoked = await enrollDevice(t.api, tenant, 'auth-revoked');
    await t.db.admin.query('UPDATE agents SET revoked_at = now() WHERE id = :id::uuid', { id: revoked.agentId });
    for (const [method, suffix, body] of calls) {
      expect((await agentCall(t.api, revoked, method, suffix, body())).status, suffix).toBe(401);
      expect((await agentCall(t.api, agent, method, suffix, body(), { agentId: revoked.agentId })).status, suffix).toBe(
        404,
      );
    }
  });
});
