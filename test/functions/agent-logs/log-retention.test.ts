import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneExpiredLogs } from '#shared/agent-logs/retention.ts';
import { auditAdminDb, closeAuditAdminDb } from '#shared/db/client.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  a = await createTenant(t.api, 'Keep');
  b = await createTenant(t.api, 'Other');
  process.env.AUDIT_ADMIN_DATABASE_URL = t.db.urls.auditAdmin;
  await closeAuditAdminDb();
});
afterAll(async () => {
  await closeAuditAdminDb();
  delete process.env.AUDIT_ADMIN_DATABASE_URL;
});

const path = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/log-retention`;
const get = (orgId: string, token: string) => t.api.request('GET', path(orgId), { token });
const put = (orgId: string, token: string, body: unknown) => t.api.request('PUT', path(orgId), { token, body });

const auditRows = (orgId: string, action: string) =>
  t.db.admin
    .query<Record<string, unknown>>(
      `SELECT action, actor_type::text AS "actorType", resource_type AS "resourceType", resource_id AS "resourceId", details
         FROM audit_logs WHERE org_id = :orgId::uuid AND action = :action ORDER BY seq`,
      { orgId, action },
    )
    .then((r) => r.rows);

describe('GET|PUT /api/v1/orgs/organizations/{id}/log-retention', () => {
  it('answers the defaults, configured false, to whoever may read the logs', async () => {
    const viewer = await orgUser(a.partnerId, a.orgId, 'org_viewer');
    for (const token of [a.orgToken, a.partnerToken, viewer]) {
      const reply = await get(a.orgId, token);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ agentLogDays: 30, eventLogDays: 90, configured: false });
    }
  });

  it('saves the days, audited as log_retention.update with before and after; a field left out keeps its value', async () => {
    const tenant = await createTenant(t.api, 'Set');
    const saved = await put(tenant.orgId, tenant.orgToken, { agentLogDays: 7, eventLogDays: 14 });
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ agentLogDays: 7, eventLogDays: 14, configured: true });
    expect((await get(tenant.orgId, tenant.orgToken)).body).toEqual(saved.body);
    const partial = await put(tenant.orgId, tenant.partnerToken, { eventLogDays: 3650 });
    expect(partial.body).toEqual({ agentLogDays: 7, eventLogDays: 3650, configured: true });
    expect(await auditRows(tenant.orgId, 'log_retention.update')).toEqual([
      {
        action: 'log_retention.update',
        actorType: 'user',
        resourceType: 'organization',
        resourceId: tenant.orgId,
        details: expect.objectContaining({
          before: { agentLogDays: 30, eventLogDays: 90, configured: false },
          after: { agentLogDays: 7, eventLogDays: 14, configured: true },
        }),
      },
      expect.objectContaining({
        details: expect.objectContaining({
          before: { agentLogDays: 7, eventLogDays: 14, configured: true },
          after: { agentLogDays: 7, eventLogDays: 3650, configured: true },
        }),
      }),
    ]);
  });

  it.each([
    [{ agentLogDays: 0 }, 'body.agentLogDays'],
    [{ agentLogDays: 3651 }, 'body.agentLogDays'],
    [{ eventLogDays: 1.5 }, 'body.eventLogDays'],
    [{ eventLogDays: '30' }, 'body.eventLogDays'],
    [{ agentLogDays: null }, 'body.agentLogDays'],
    [{ agentLogDays: 10, keepForever: true }, 'body.keepForever'],
  ])('refuses %j with 400 naming %s, and stores nothing', async (body, field) => {
    const reply = await put(a.orgId, a.orgToken, body);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(field);
    expect((await get(a.orgId, a.orgToken)).body).toEqual({ agentLogDays: 30, eventLogDays: 90, configured: false });
    expect(await auditRows(a.orgId, 'log_retention.update')).toEqual([]);
  });

  it('refuses an empty body with 400', async () => {
    expect((await put(a.orgId, a.orgToken, {})).status).toBe(400);
  });

  it("answers 404 for another tenant's organization, reading or changing", async () => {
    expect((await get(b.orgId, a.orgToken)).status).toBe(404);
    expect((await get(b.orgId, a.partnerToken)).status).toBe(404);
    expect((await put(b.orgId, a.partnerToken, { agentLogDays: 1 })).status).toBe(404);
    expect((await get(b.orgId, b.orgToken)).body.configured).toBe(false);
  });

  it('is changed by administrators only: technicians and viewers get 403', async () => {
    for (const token of [
      await orgUser(a.partnerId, a.orgId, 'org_technician'),
      await orgUser(a.partnerId, a.orgId, 'org_viewer'),
      await partnerUser(a.partnerId, 'partner_technician'),
    ])
      expect((await put(a.orgId, token, { agentLogDays: 1 })).status).toBe(403);
    expect(await auditRows(a.orgId, 'log_retention.update')).toEqual([]);
  });
});

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

/** Stored entries of a device, by age in days (their own timestamp; created_at is now). */
async function seedLogs(tenant: Tenant, deviceId: string, agentAges: number[], eventAges: number[]) {
  for (const [i, age] of agentAges.entries())
    await t.db.admin.query(
      `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message)
       VALUES (:deviceId::uuid, :orgId::uuid, :at::timestamptz, 'info', 'svc', :message)`,
      { deviceId, orgId: tenant.orgId, at: daysAgo(age), message: `entry ${i}` },
    );
  for (const [i, age] of eventAges.entries())
    await t.db.admin.query(
      `INSERT INTO device_event_logs (device_id, org_id, timestamp, level, category, source, event_id, message)
       VALUES (:deviceId::uuid, :orgId::uuid, :at::timestamptz, 'warning', 'system', 'Service Control Manager', :eventId, 'x')`,
      { deviceId, orgId: tenant.orgId, at: daysAgo(age), eventId: `System:${i}` },
    );
}

const remaining = async (table: string, deviceId: string) =>
  (
    await t.db.admin.query<{ age: number }>(
      `SELECT round(extract(epoch FROM now() - timestamp) / 86400)::int AS age FROM ${table}
        WHERE device_id = :deviceId::uuid ORDER BY timestamp`,
      { deviceId },
    )
  ).rows.map((r) => r.age);

describe('the daily run prunes agent diagnostic logs and device event logs', () => {
  it('deletes the rows older than each organization’s window in batches, with one summary row per organization and log type', async () => {
    const set = await createTenant(t.api, 'Short');
    expect((await put(set.orgId, set.orgToken, { agentLogDays: 7, eventLogDays: 14 })).status).toBe(200);
    const defaults = await createTenant(t.api, 'Default');
    const fresh = await createTenant(t.api, 'Fresh');
    const short = await enrollDevice(t.api, set, 'short-1');
    const old = await enrollDevice(t.api, defaults, 'default-1');
    const young = await enrollDevice(t.api, fresh, 'fresh-1');
    await seedLogs(set, short.deviceId, [12, 11, 10, 9, 8, 3], [20, 15, 10]);
    await seedLogs(defaults, old.deviceId, [40, 20], [100, 50]);
    await seedLogs(fresh, young.deviceId, [1], [1]);

    const run = await pruneExpiredLogs(auditAdminDb(), { batchRows: 2 });
    expect(run).toMatchObject({ agentLogsDeleted: 6, eventLogsDeleted: 3, failed: 0, stopped: false });

    expect(await remaining('agent_logs', short.deviceId)).toEqual([3]);
    expect(await remaining('device_event_logs', short.deviceId)).toEqual([10]);
    expect(await remaining('agent_logs', old.deviceId)).toEqual([20]);
    expect(await remaining('device_event_logs', old.deviceId)).toEqual([50]);
    expect(await remaining('agent_logs', young.deviceId)).toEqual([1]);
    // A page's total counts only what is left.
    const page = await t.api.request('GET', `/api/v1/devices/${short.deviceId}/diagnostic-logs`, {
      token: set.orgToken,
    });
    expect(page.body.pagination.total).toBe(1);

    const summary = (orgId: string, action: string) => auditRows(orgId, action);
    expect(await summary(set.orgId, 'agent_logs.prune')).toEqual([
      {
        action: 'agent_logs.prune',
        actorType: 'system',
        resourceType: 'organization',
        resourceId: set.orgId,
        details: expect.objectContaining({ count: 5, retentionDays: 7 }),
      },
    ]);
    expect(await summary(set.orgId, 'device_event_logs.prune')).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ count: 2, retentionDays: 14 }) }),
    ]);
    expect(await summary(defaults.orgId, 'agent_logs.prune')).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ count: 1, retentionDays: 30 }) }),
    ]);
    expect(await summary(defaults.orgId, 'device_event_logs.prune')).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ count: 1, retentionDays: 90 }) }),
    ]);
    expect(await summary(fresh.orgId, 'agent_logs.prune')).toEqual([]);
    expect(await summary(fresh.orgId, 'device_event_logs.prune')).toEqual([]);
    // The viewer files them under system.
    const listed = await t.api.request('GET', '/api/v1/audit-logs/logs?action=prune', { token: set.orgToken });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((row: { category: string }) => row.category)).toEqual(['system', 'system']);

    // Nothing left to delete: the next run writes no row.
    expect(await pruneExpiredLogs(auditAdminDb())).toMatchObject({ agentLogsDeleted: 0, eventLogsDeleted: 0 });
    expect(await summary(set.orgId, 'agent_logs.prune')).toHaveLength(1);
  });

  it('stops between batches when told to, keeping the count of what it deleted', async () => {
    const tenant = await createTenant(t.api, 'Stop');
    const device = await enrollDevice(t.api, tenant, 'stop-1');
    await seedLogs(tenant, device.deviceId, [40, 40, 40], []);
    const stopping = new AbortController();
    stopping.abort();
    expect(await pruneExpiredLogs(auditAdminDb(), { signal: stopping.signal })).toMatchObject({
      agentLogsDeleted: 0,
      stopped: true,
    });
    expect(await remaining('agent_logs', device.deviceId)).toHaveLength(3);
  });
});
