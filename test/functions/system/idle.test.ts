/**
 * What may wake a paused Aurora: only real work. Uptime checks, credentials that cannot be ours and
 * agents' keep-alives are answered without a single statement, counted at the Db seam of the API's connection
 * (appStatementCount) over real HTTP and WebSocket connections to the local gateways.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { signUserToken } from '#infra/local/tokens.ts';
import { appStatementCount } from '#shared/db/client.ts';
import { localJobsSettled } from '#shared/queue/work-queue.ts';
import { useApi } from '#test/support/api.ts';
import { TestConnection } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let agent: { agentId: string; deviceId: string; token: string };

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Idle');
  agent = await enrollDevice(t.api, tenant);
});

/** The statements the API's connection ran while `work` ran, once the jobs earlier work queued have run. */
async function statementsDuring(work: () => Promise<unknown>): Promise<number> {
  await localJobsSettled();
  const before = appStatementCount();
  await work();
  return appStatementCount() - before;
}

const forged = () =>
  signUserToken(
    { sub: randomUUID(), role: 'platform_admin', scope: 'platform' },
    { secret: 'not-the-secret-the-api-verifies-with' },
  );

describe('a request that is no work', () => {
  it('answers liveness without the database, and readiness with it', async () => {
    expect(await statementsDuring(() => t.api.request('GET', '/api/v1/health'))).toBe(0);
    expect(await t.api.request('GET', '/api/v1/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await t.api.request('GET', '/api/v1/health/ready');
    expect(ready).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await statementsDuring(() => t.api.request('GET', '/api/v1/health/ready'))).toBeGreaterThan(0);
  });

  it('refuses credentials that cannot be ours by their shape with 401 before any statement', async () => {
    const orgRoute = `/api/v1/orgs/organizations/${tenant.orgId}`;
    const agentRoute = `/api/v1/agents/${agent.agentId}/heartbeat`;
    const attempts: [string, Record<string, string>][] = [
      [orgRoute, { authorization: `Bearer ${await forged()}` }],
      [orgRoute, { authorization: 'Bearer garbage' }],
      [orgRoute, { 'x-api-key': 'garbage' }],
      [orgRoute, { 'x-api-key': `lbk_${'A'.repeat(42)}` }],
      [orgRoute, { 'x-api-key': `lbk_${'A'.repeat(42)}!` }],
      [orgRoute, { authorization: `Bearer lbk_${'A'.repeat(44)}` }],
      [agentRoute, { authorization: 'Bearer lba_not-a-real-token' }],
      [agentRoute, { authorization: `Bearer lbk_${'A'.repeat(43)}` }],
      [agentRoute, { authorization: `Bearer ${agent.token}x` }],
    ];
    for (const [path, headers] of attempts) {
      const method = path === agentRoute ? 'POST' : 'GET';
      let reply: Awaited<ReturnType<typeof t.api.request>> | undefined;
      expect(
        await statementsDuring(async () => {
          reply = await t.api.request(method, path, { headers, body: method === 'POST' ? {} : undefined });
        }),
        JSON.stringify(headers),
      ).toBe(0);
      expect(reply!.status).toBe(401);
    }
  });

  it('still looks up a key or token of the right shape, and refuses an unknown one', async () => {
    const unknown = `lbk_${'A'.repeat(43)}`;
    let reply: Awaited<ReturnType<typeof t.api.request>> | undefined;
    const statements = await statementsDuring(async () => {
      reply = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, {
        headers: { 'x-api-key': unknown },
      });
    });
    expect(reply!.status).toBe(401);
    expect(statements).toBe(1);
  });

  it('refuses a $connect whose ?token= cannot be an agent token without a statement', async () => {
    for (const token of ['garbage', `lba_${'x'.repeat(43)}.`, `lbk_${'A'.repeat(43)}`]) {
      const statements = await statementsDuring(() =>
        expect(TestConnection.open(t.api, token, 'query')).rejects.toMatchObject({ status: 401 }),
      );
      expect(statements).toBe(0);
    }
  });

  it("writes nothing for an idle agent's keep-alives; its $connect and heartbeat are real work", async () => {
    let connection: TestConnection | undefined;
    expect(
      await statementsDuring(async () => {
        connection = await TestConnection.open(t.api, agent.token);
      }),
    ).toBeGreaterThan(0);
    try {
      const pings = await statementsDuring(async () => {
        for (let i = 0; i < 5; i++) connection!.send({ type: 'ping' });
        // The gateway invokes $default for each message; a round trip through it shows they were all handled.
        await t.api.request('GET', '/api/v1/health');
        await new Promise((resolve) => setTimeout(resolve, 200));
      });
      expect(pings).toBe(0);
      const heartbeat = await statementsDuring(() =>
        t.api.request('POST', `/api/v1/agents/${agent.agentId}/heartbeat`, {
          token: agent.token,
          body: { status: 'online' },
        }),
      );
      expect(heartbeat).toBeGreaterThan(0);
    } finally {
      await connection?.close();
    }
  });
});
