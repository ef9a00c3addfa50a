import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Agent, deviceEvent, logEntry, submitEvents, submitLogs } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let other: Tenant;
beforeAll(async () => {
  other = await createTenant(t.api, 'Globex');
});
afterEach(() => {
  vi.restoreAllMocks();
});

const limitsPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/ingest-limits`;
const setLimits = (tenant: Tenant, body: unknown, token = tenant.partnerToken) =>
  t.api.request('PUT', limitsPath(tenant.orgId), { token, body });

/** A tenant of its own for each test: budgets are per organization. */
async function tenantWithBudget(logsPerDeviceHour: number | null, eventsPerDeviceHour: number | null = null) {
  const tenant = await createTenant(t.api, `Budget ${Math.random()}`);
  const reply = await setLimits(tenant, { logsPerDeviceHour, eventsPerDeviceHour });
  if (reply.status !== 200) throw new Error(JSON.stringify(reply.body));
  return tenant;
}

const logs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => logEntry(from + i));
const stored = async (table: 'agent_logs' | 'device_event_logs', agent: Agent) =>
  Number(
    (
      await t.db.admin.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE device_id = :id::uuid`, {
        id: agent.deviceId,
      })
    ).rows[0]!.n,
  );

/** Runs `work` while the database refuses a log entry whose message is `poison` (a trigger), errors kept quiet. */
async function withPoisonedEntries(work: () => Promise<void>): Promise<void> {
  vi.spyOn(console, 'error').mockImplementation(() => undefined);
  await t.db.admin.query(`CREATE OR REPLACE FUNCTION test_poison_budget() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.message = 'poison' THEN RAISE EXCEPTION 'poisoned batch'; END IF; RETURN NEW; END $$`);
  await t.db.admin.query(
    'CREATE OR REPLACE TRIGGER test_poison_budget BEFORE INSERT ON agent_logs FOR EACH ROW EXECUTE FUNCTION test_poison_budget()',
  );
  try {
    await work();
  } finally {
    await t.db.admin.query('DROP TRIGGER test_poison_budget ON agent_logs');
  }
}

describe('the hourly ingest budget per device', () => {
  it('refuses what goes beyond it with 429 RATE_LIMITED and Retry-After, storing nothing of that request', async () => {
    const tenant = await tenantWithBudget(10);
    const agent = await enrollDevice(t.api, tenant, 'budget-1');
    expect((await submitLogs(t.api, agent, logs(6))).status).toBe(201);
    const refused = await submitLogs(t.api, agent, logs(5));
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      code: 'RATE_LIMITED',
      details: { budget: 10, requested: 5, retryAfterSeconds: expect.any(Number) },
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    expect(retryAfter).toBe(Math.max(1, refused.body.error.details.retryAfterSeconds));
    expect(await stored('agent_logs', agent)).toBe(6);
    expect((await submitLogs(t.api, agent, logs(4))).status).toBe(201);
    expect((await submitLogs(t.api, agent, logs(1))).status).toBe(429);
    expect(await stored('agent_logs', agent)).toBe(10);
  });

  it('refuses a keyed upload beyond it with 429 keeping neither its entries nor its key: the same key stores it once the budget allows', async () => {
    const tenant = await tenantWithBudget(10);
    const agent = await enrollDevice(t.api, tenant, 'budget-keyed');
    expect((await submitLogs(t.api, agent, logs(6), { headers: { 'idempotency-key': 'budget-1' } })).status).toBe(201);
    const upload = logs(5, 6);
    const headers = { 'idempotency-key': 'budget-2' };
    expect((await submitLogs(t.api, agent, upload, { headers })).status).toBe(429);
    expect(await stored('agent_logs', agent)).toBe(6);
    expect((await setLimits(tenant, { logsPerDeviceHour: 20 })).status).toBe(200);
    const resent = await submitLogs(t.api, agent, upload, { headers });
    expect(resent).toMatchObject({ status: 201, body: { received: 5 } });
    expect(resent.headers.get('idempotent-replayed')).toBeNull();
    expect(await stored('agent_logs', agent)).toBe(11);
  });

  it("is each device's own", async () => {
    const tenant = await tenantWithBudget(3);
    const one = await enrollDevice(t.api, tenant, 'budget-own-1');
    const two = await enrollDevice(t.api, tenant, 'budget-own-2');
    expect((await submitLogs(t.api, one, logs(3))).status).toBe(201);
    expect((await submitLogs(t.api, one, logs(1))).status).toBe(429);
    expect((await submitLogs(t.api, two, logs(3))).status).toBe(201);
  });

  it('starts afresh each clock hour', async () => {
    const tenant = await tenantWithBudget(2);
    const agent = await enrollDevice(t.api, tenant, 'budget-hour');
    expect((await submitLogs(t.api, agent, logs(2))).status).toBe(201);
    expect((await submitLogs(t.api, agent, logs(1))).status).toBe(429);
    await t.db.admin.query(
      `UPDATE agent_ingest_usage SET window_start = window_start - interval '1 hour' WHERE device_id = :id::uuid`,
      { id: agent.deviceId },
    );
    expect((await submitLogs(t.api, agent, logs(2))).status).toBe(201);
    expect((await submitLogs(t.api, agent, logs(1))).status).toBe(429);
  });

  it('cannot be overdrawn by concurrent requests', async () => {
    const tenant = await tenantWithBudget(50);
    const agent = await enrollDevice(t.api, tenant, 'budget-race');
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => submitLogs(t.api, agent, logs(10, i * 10))));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(5);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(7);
    expect(await stored('agent_logs', agent)).toBe(50);
  });

  it('refuses a request larger than the whole budget, and everything when the budget is 0', async () => {
    const small = await tenantWithBudget(5);
    const agent = await enrollDevice(t.api, small, 'budget-small');
    const reply = await submitLogs(t.api, agent, logs(6));
    expect(reply.status).toBe(429);
    expect(reply.body.error.message).toMatch(/more than the device's hourly budget of 5/);
    const stopped = await tenantWithBudget(0, 0);
    const quiet = await enrollDevice(t.api, stopped, 'budget-zero');
    expect((await submitLogs(t.api, quiet, logs(1))).status).toBe(429);
    expect((await submitEvents(t.api, quiet, [deviceEvent(1)])).status).toBe(429);
  });

  it('charges only the events stored: duplicates cost nothing', async () => {
    const tenant = await tenantWithBudget(null, 5);
    const agent = await enrollDevice(t.api, tenant, 'budget-events');
    expect((await submitEvents(t.api, agent, [deviceEvent(1), deviceEvent(2), deviceEvent(3)])).body.count).toBe(3);
    for (let i = 0; i < 3; i++)
      expect((await submitEvents(t.api, agent, [deviceEvent(1), deviceEvent(2), deviceEvent(3)])).body.count).toBe(0);
    expect((await submitEvents(t.api, agent, [deviceEvent(3), deviceEvent(4), deviceEvent(5)])).body.count).toBe(2);
    const refused = await submitEvents(t.api, agent, [deviceEvent(6)]);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await stored('device_event_logs', agent)).toBe(5);
    const { rows } = await t.db.admin.query(
      `SELECT details FROM audit_logs WHERE action = 'agent.eventlogs.submit' AND resource_id = :id::uuid`,
      { id: agent.deviceId },
    );
    expect(rows).toHaveLength(5);
  });

  it('gives back the budget of a batch that failed', async () => {
    const tenant = await tenantWithBudget(200);
    const agent = await enrollDevice(t.api, tenant, 'budget-release');
    await withPoisonedEntries(async () => {
      const batch = logs(200);
      batch[150] = logEntry(150, { message: 'poison' });
      expect((await submitLogs(t.api, agent, batch)).body).toEqual({ received: 100, failed: [{ from: 100, to: 199 }] });
    });
    expect((await submitLogs(t.api, agent, logs(100))).status).toBe(201);
    expect((await submitLogs(t.api, agent, logs(1))).status).toBe(429);
  });

  it('charges nothing for an upload of one batch the database refuses', async () => {
    const tenant = await tenantWithBudget(3);
    const agent = await enrollDevice(t.api, tenant, 'budget-refused');
    await withPoisonedEntries(async () => {
      const batch = [logEntry(0), logEntry(1, { message: 'poison' })];
      expect((await submitLogs(t.api, agent, batch)).status).toBe(500);
    });
    expect((await submitLogs(t.api, agent, logs(3))).status).toBe(201);
    expect(await stored('agent_logs', agent)).toBe(3);
  });
});

describe('GET and PUT /api/v1/orgs/organizations/{id}/ingest-limits', () => {
  it('shows the defaults of an organization without overrides', async () => {
    const tenant = await createTenant(t.api, 'Defaults');
    const reply = await t.api.request('GET', limitsPath(tenant.orgId), { token: tenant.orgToken });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      orgId: tenant.orgId,
      logsPerDeviceHour: 100_000,
      eventsPerDeviceHour: 50_000,
      overrides: { logsPerDeviceHour: null, eventsPerDeviceHour: null },
    });
  });

  it('lets the partner override one budget at a time, null restoring the default, audited as organization.update', async () => {
    const tenant = await createTenant(t.api, 'Overrides');
    const first = await setLimits(tenant, { logsPerDeviceHour: 5000 });
    expect(first.body).toMatchObject({
      logsPerDeviceHour: 5000,
      eventsPerDeviceHour: 50_000,
      overrides: { logsPerDeviceHour: 5000, eventsPerDeviceHour: null },
    });
    const second = await setLimits(tenant, { eventsPerDeviceHour: 10 });
    expect(second.body.overrides).toEqual({ logsPerDeviceHour: 5000, eventsPerDeviceHour: 10 });
    const reset = await setLimits(tenant, { logsPerDeviceHour: null });
    expect(reset.body).toMatchObject({
      logsPerDeviceHour: 100_000,
      overrides: { logsPerDeviceHour: null, eventsPerDeviceHour: 10 },
    });
    const { rows } = await t.db.admin.query<{ details: any }>(
      `SELECT details FROM audit_logs WHERE action = 'organization.update' AND resource_id = :id::uuid ORDER BY seq`,
      { id: tenant.orgId },
    );
    expect(rows.map((r) => [r.details.before, r.details.after])).toEqual([
      [{ logsPerDeviceHour: null }, { logsPerDeviceHour: 5000 }],
      [{ eventsPerDeviceHour: null }, { eventsPerDeviceHour: 10 }],
      [{ logsPerDeviceHour: 5000 }, { logsPerDeviceHour: null }],
    ]);
  });

  it("is not for the organization's own users: they may read the budgets but not raise them (403)", async () => {
    const tenant = await createTenant(t.api, 'Customer');
    expect((await setLimits(tenant, { logsPerDeviceHour: 10_000_000 }, tenant.orgToken)).status).toBe(403);
    expect(
      (await setLimits(tenant, { logsPerDeviceHour: 1 }, await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer')))
        .status,
    ).toBe(403);
  });

  it("is 404 for another partner's organization", async () => {
    const tenant = await createTenant(t.api, 'Nosy');
    expect((await setLimits(other, { logsPerDeviceHour: 1 }, tenant.partnerToken)).status).toBe(404);
    expect((await t.api.request('GET', limitsPath(other.orgId), { token: tenant.partnerToken })).status).toBe(404);
  });

  it('refuses budgets that are negative, fractional or above 10,000,000, unknown fields and an empty change (400)', async () => {
    const tenant = await createTenant(t.api, 'Invalid');
    for (const body of [
      { logsPerDeviceHour: -1 },
      { eventsPerDeviceHour: 1.5 },
      { logsPerDeviceHour: 10_000_001 },
      { logsPerDay: 5 },
      {},
    ]) {
      expect((await setLimits(tenant, body)).status, JSON.stringify(body)).toBe(400);
    }
  });
});
