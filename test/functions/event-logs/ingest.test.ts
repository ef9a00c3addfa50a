import { beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { type Agent, deviceEvent, submitEvents } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

const storedEvents = (agent: Agent) =>
  t.db.admin
    .query<Record<string, any>>(
      `SELECT device_id AS "deviceId", org_id AS "orgId", timestamp, level::text AS level, category::text AS category, source,
              event_id AS "eventId", message, details
         FROM device_event_logs WHERE device_id = :id::uuid ORDER BY timestamp DESC, event_id`,
      { id: agent.deviceId },
    )
    .then((r) => r.rows);

const submissions = (agent: Agent) =>
  t.db.admin
    .query<Record<string, any>>(
      `SELECT actor_type::text AS "actorType", actor_id AS "actorId", resource_type AS "resourceType", resource_id AS "resourceId",
              resource_name AS "resourceName", ip_address AS "ipAddress", result::text AS result, details
         FROM audit_logs WHERE action = 'agent.eventlogs.submit' AND resource_id = :id::uuid ORDER BY seq`,
      { id: agent.deviceId },
    )
    .then((r) => r.rows);

describe('PUT /api/v1/agents/{id}/eventlogs', () => {
  it("stores the events with the agent's device and organization and answers { success: true, count }", async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-1');
    const event = {
      timestamp: '2026-01-15T10:30:00+01:00',
      level: 'critical',
      category: 'hardware',
      source: 'disk',
      eventId: '7',
      message: 'The device \\Device\\Harddisk0 has a bad block',
      details: { sector: 1234 },
    };
    const reply = await submitEvents(t.api, agent, [event, deviceEvent(1)]);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ success: true, count: 2 });
    expect((await storedEvents(agent)).find((e) => e.source === 'disk')).toEqual({
      deviceId: agent.deviceId,
      orgId: tenant.orgId,
      timestamp: new Date('2026-01-15T09:30:00Z'),
      level: 'critical',
      category: 'hardware',
      source: 'disk',
      eventId: '7',
      message: event.message,
      details: { sector: 1234 },
    });
  });

  it('ignores duplicates on (device, source, eventId), of stored events and within one submission, and does not count them', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-dup');
    expect((await submitEvents(t.api, agent, [deviceEvent(1), deviceEvent(2)])).body).toEqual({
      success: true,
      count: 2,
    });
    const again = await submitEvents(t.api, agent, [
      deviceEvent(1),
      deviceEvent(2),
      deviceEvent(3),
      deviceEvent(3, { message: 'repeat' }),
      deviceEvent(4),
    ]);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, count: 2 });
    const stored = await storedEvents(agent);
    expect(stored.map((e) => e.eventId).sort()).toEqual(['record-1', 'record-2', 'record-3', 'record-4']);
    expect(stored.find((e) => e.eventId === 'record-3')!.message).not.toBe('repeat');
  });

  it('treats the same eventId of another source, or of another device, as a different event', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-sources');
    const twin = await enrollDevice(t.api, tenant, 'events-twin');
    const reply = await submitEvents(t.api, agent, [deviceEvent(1), deviceEvent(1, { source: 'Application Error' })]);
    expect(reply.body.count).toBe(2);
    expect((await submitEvents(t.api, twin, [deviceEvent(1)])).body.count).toBe(1);
  });

  it('stores every event without an eventId: none of them is a duplicate', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-no-id');
    const event = deviceEvent(1, { eventId: undefined });
    expect((await submitEvents(t.api, agent, [event, event, { ...event, eventId: null }])).body.count).toBe(3);
    expect((await submitEvents(t.api, agent, [event])).body.count).toBe(1);
  });

  it('dedupes across insert batches of one submission', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-batches');
    const events = Array.from({ length: 1000 }, (_, i) => deviceEvent(i % 250));
    const reply = await submitEvents(t.api, agent, events);
    expect(reply.body).toEqual({ success: true, count: 250 });
    expect(await storedEvents(agent)).toHaveLength(250);
  });

  it('writes one agent.eventlogs.submit audit row per submission, by the agent, with the count, time span and duplicates', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-audit');
    // The span is given to the whole second, holding its events: the first rounded down, the last up.
    const at = (n: number, timestamp: string) => deviceEvent(n, { timestamp });
    await submitEvents(t.api, agent, [
      at(1, '2026-03-01T10:00:00.400Z'),
      at(2, '2026-03-01T09:58:30.600+00:00'),
      at(2, '2026-03-01T09:58:30.600Z'),
    ]);
    await submitEvents(t.api, agent, [at(2, '2026-03-01T09:58:30.600Z'), at(3, '2026-03-01T11:00:00Z')]);
    await submitEvents(t.api, agent, [at(4, '2026-03-02T08:00:00.250Z')]);
    await submitEvents(t.api, agent, [at(4, '2026-03-02T08:00:00.250Z')]);
    const span = ['2026-03-01T09:58:30Z', '2026-03-01T10:00:01Z', '2026-03-01T11:00:00Z', '2026-03-02T08:00:00Z'];
    expect(await submissions(agent)).toEqual([
      {
        actorType: 'agent',
        actorId: agent.agentId,
        resourceType: 'device',
        resourceId: agent.deviceId,
        resourceName: 'events-audit',
        ipAddress: '127.0.0.1',
        result: 'success',
        details: { count: 2, from: span[0], to: span[1], duplicates: 1, actor: { name: 'events-audit', role: null } },
      },
      expect.objectContaining({
        details: { count: 1, from: span[2], to: span[2], duplicates: 1, actor: expect.anything() },
      }),
      expect.objectContaining({
        details: { count: 1, from: span[3], to: '2026-03-02T08:00:01Z', actor: expect.anything() },
      }),
      expect.objectContaining({ details: { count: 0, duplicates: 1, actor: expect.anything() } }),
    ]);
    expect(await verifyChain(t.db.admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('refuses more than 1000 events with 400 and stores none', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-1001');
    const reply = await submitEvents(
      t.api,
      agent,
      Array.from({ length: 1001 }, (_, i) => deviceEvent(i)),
    );
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('body.events');
    expect(await storedEvents(agent)).toEqual([]);
    expect(await submissions(agent)).toEqual([]);
  });

  it.each([
    ['timestamp', { timestamp: 'last tuesday' }],
    ['timestamp', { timestamp: undefined }],
    ['level', { level: 'information' }],
    ['category', { category: 'network' }],
    ['category', { category: undefined }],
    ['source', { source: '' }],
    ['source', { source: 's'.repeat(256) }],
    ['eventId', { eventId: 4625 }],
    ['eventId', { eventId: 'e'.repeat(101) }],
    ['message', { message: undefined }],
    ['details', { details: [1, 2] }],
  ])(
    'refuses an event with a bad %s (%j) with 400 naming body.events.<index>.<field>, and stores none',
    async (field, override) => {
      const agent = await enrollDevice(t.api, tenant, `events-bad-${field}`);
      const events = Array.from({ length: 120 }, (_, i) => deviceEvent(i));
      events[101] = deviceEvent(101, override);
      const reply = await submitEvents(t.api, agent, events);
      expect(reply.status).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual([`body.events.101.${field}`]);
      expect(await storedEvents(agent)).toEqual([]);
    },
  );

  it('stores an event stamped more than 10 minutes ahead at the receipt time, keeping the original in details.originalTimestamp', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-future');
    const future = '2099-01-01T00:00:00Z';
    const before = Date.now();
    await submitEvents(t.api, agent, [deviceEvent(1, { timestamp: future, details: null })]);
    const [stored] = await storedEvents(agent);
    expect(stored!.timestamp.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(stored!.timestamp.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(stored!.details).toEqual({ originalTimestamp: future });
  });

  it('accepts an empty submission without an audit row', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-empty');
    expect((await submitEvents(t.api, agent, [])).body).toEqual({ success: true, count: 0 });
    expect(await submissions(agent)).toEqual([]);
  });

  it('refuses a body above 4 MiB with 413 before parsing it', async () => {
    const agent = await enrollDevice(t.api, tenant, 'events-huge');
    const reply = await t.api.request('PUT', `/api/v1/agents/${agent.agentId}/eventlogs`, {
      token: agent.token,
      rawBody: `{"events":[{"message":"${'x'.repeat(4 * 1024 * 1024)}"}]}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
