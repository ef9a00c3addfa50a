import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LogEntry } from '#shared/agent-logs/schemas.ts';
import { insertLogBatch } from '#shared/agent-logs/store.ts';
import { type Agent, deviceEvent, logEntry, submitEvents, submitLogs } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type Receiver, startHttpsReceiver, startSyslogReceiver, useReceivers } from '#test/support/siem-receivers.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const local = useReceivers();
let tenant: Tenant;
let agent: Agent;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Logstream');
  agent = await enrollDevice(t.api, tenant, 'ws-17');
});

async function createStream(body: Record<string, unknown>) {
  const reply = await t.api.request('POST', '/api/v1/audit-streams', {
    token: tenant.partnerToken,
    body: { name: `SIEM ${randomUUID().slice(0, 8)}`, orgId: tenant.orgId, ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; streams: string[] };
}

type StreamStatus = {
  stream: string;
  lastDeliveredSeq: number;
  lagRows: number;
  lagSeconds: number;
  lastError?: string;
};
const status = async (id: string) => {
  const reply = await t.api.request('GET', `/api/v1/audit-streams/${id}/status`, { token: tenant.partnerToken });
  expect(reply.status).toBe(200);
  return reply.body.organizations[0] as { orgId: string; lastDeliveredSeq: number; streams: StreamStatus[] };
};
const streamOf = (org: { streams: StreamStatus[] }, name: string) => org.streams.find((each) => each.stream === name)!;

const head = async (source: string) =>
  (
    await t.db.admin.query<{ seq: number }>(
      'SELECT seq FROM log_stream_heads WHERE org_id = :orgId::uuid AND source = :source::text',
      { orgId: tenant.orgId, source },
    )
  ).rows[0]?.seq ?? 0;

const records = (receiver: Receiver, type: string) =>
  receiver.messages.map((line) => JSON.parse(line)).filter((record) => record.type === type);

/** The keys must only grow: at least once, in order. */
const increasing = (seqs: number[]) => seqs.every((seq, n) => n === 0 || seq > seqs[n - 1]!);

describe('device event logs and agent diagnostic logs', () => {
  it('streams both beside the audit trail, each in its own key order from its own cursor, with its organization and device', async () => {
    const receiver = local.keep(await startHttpsReceiver(local.cert));
    const startEvents = await head('device-events');
    const stream = await createStream({
      type: 'https',
      format: 'ndjson',
      endpoint: receiver.endpoint,
      caCertificate: local.cert.cert,
      streams: ['audit', 'device-events', 'agent-logs'],
    });
    expect(stream.streams).toEqual(['audit', 'device-events', 'agent-logs']);
    const hostile = 'quote " backslash \\ bracket ] pipe | equals = newline \n end';
    const events = [0, 1, 2].map((n) => deviceEvent(n, { eventId: `ls-${randomUUID()}`, message: `${hostile} ${n}` }));
    expect((await submitEvents(t.api, agent, events)).status).toBe(200);
    const logs = [0, 1, 2, 3].map((n) => logEntry(n, { message: `${hostile} ${n}` }));
    expect((await submitLogs(t.api, agent, logs)).status).toBe(201);

    await eventually(() => records(receiver, 'device-event').length >= 3 && records(receiver, 'agent-log').length >= 4);
    const delivered = records(receiver, 'device-event');
    expect(delivered.map((record) => record.message)).toEqual(events.map((event) => event.message));
    expect(delivered.map((record) => record.seq)).toEqual([startEvents + 1, startEvents + 2, startEvents + 3]);
    expect(delivered[0]).toEqual(
      expect.objectContaining({
        orgId: tenant.orgId,
        deviceId: agent.deviceId,
        hostname: 'ws-17',
        category: 'security',
        level: 'warning',
        source: events[0]!.source,
        eventId: events[0]!.eventId,
        details: { logonType: 3 },
      }),
    );
    const entries = records(receiver, 'agent-log');
    expect(entries.map((record) => record.message)).toEqual(logs.map((entry) => entry.message));
    expect(increasing(entries.map((record) => record.seq))).toBe(true);
    expect(entries[0]).toEqual(
      expect.objectContaining({ orgId: tenant.orgId, deviceId: agent.deviceId, component: 'heartbeat', level: 'info' }),
    );
    // The submission's own audit row goes the audit stream's way (sealed and delivered by a job of its own).
    await eventually(() => records(receiver, 'audit').some((record) => record.action === 'agent.eventlogs.submit'));

    // Events sent again are duplicates: nothing new reaches the receiver, and they take no key (the delivery numbers
    // only the rows stored).
    expect((await submitEvents(t.api, agent, events)).status).toBe(200);
    const eventsHead = await head('device-events');
    expect(eventsHead).toBe(startEvents + 3);
    await eventually(async () => streamOf(await status(stream.id), 'device-events').lastDeliveredSeq === eventsHead);
    const now = await status(stream.id);
    expect(streamOf(now, 'device-events')).toEqual(expect.objectContaining({ lagRows: 0, lagSeconds: 0 }));
    expect(streamOf(now, 'agent-logs')).toEqual(
      expect.objectContaining({ lastDeliveredSeq: await head('agent-logs'), lagRows: 0 }),
    );
    // The fields of the organization stay the audit trail's.
    expect(now.lastDeliveredSeq).toBe(streamOf(now, 'audit').lastDeliveredSeq);
    expect(records(receiver, 'device-event')).toHaveLength(3);
  });

  it("stores a streamed organization's entries while another insert of it is still open: no insert waits for another, and each gets its key once committed", async () => {
    const receiver = local.keep(await startHttpsReceiver(local.cert));
    await createStream({
      type: 'https',
      format: 'ndjson',
      endpoint: receiver.endpoint,
      caCertificate: local.cert.cert,
      streams: ['agent-logs'],
    });
    // Another component: the per-device counts of the two inserts are rows of their own.
    const held = [0, 1].map((n) => logEntry(n, { message: `held ${n}`, component: 'updater' }) as LogEntry);
    const submitted = [0, 1, 2].map((n) => logEntry(n, { message: `submitted ${n}` }));
    await t.db.admin.transaction(async (tx) => {
      await insertLogBatch(tx, { id: agent.deviceId, orgId: tenant.orgId }, held);
      // The insert above holds nothing another insert of the organization needs: this one is stored at once.
      expect((await submitLogs(t.api, agent, submitted)).status).toBe(201);
    });
    // The held entries were stored by no request: a later one arms their delivery.
    const later = logEntry(0, { message: 'later' });
    expect((await submitLogs(t.api, agent, [later])).status).toBe(201);
    await eventually(() => records(receiver, 'agent-log').length >= 6);
    const entries = records(receiver, 'agent-log');
    expect(entries.map((record) => record.message).sort()).toEqual(
      [...held, ...submitted, later].map((entry) => entry.message).sort(),
    );
    // Each insert's entries keep their order, and the keys only grow.
    const messages = entries.map((record) => record.message);
    expect(messages.filter((message) => message.startsWith('held'))).toEqual(held.map((entry) => entry.message));
    expect(messages.filter((message) => message.startsWith('submitted '))).toEqual(
      submitted.map((entry) => entry.message),
    );
    expect(increasing(entries.map((record) => record.seq))).toBe(true);
    expect(entries.at(-1)!.seq).toBe(await head('agent-logs'));
  });

  it('renders log entries in the destination format (CEF over syslog), sends only what its filter lets through, and keeps its cursor while the receiver is down', async () => {
    const receiver = local.keep(await startSyslogReceiver());
    const stream = await createStream({
      type: 'syslog-tcp',
      format: 'cef',
      endpoint: receiver.endpoint,
      streams: ['device-events'],
      filter: { deviceEvents: { levels: ['critical'] } },
    });
    await receiver.down();
    const critical = deviceEvent(0, {
      eventId: `c-${randomUUID()}`,
      level: 'critical',
      message: 'Disk | failed = yes',
    });
    const minor = deviceEvent(1, { eventId: `m-${randomUUID()}`, level: 'info' });
    expect((await submitEvents(t.api, agent, [minor, critical])).status).toBe(200);
    await eventually(async () =>
      /ECONNREFUSED/.test(streamOf(await status(stream.id), 'device-events').lastError ?? ''),
    );
    await receiver.up();
    // The retry armed by the failure delivers the entry once the receiver is back.
    await receiver.waitFor(1);
    expect(receiver.messages).toHaveLength(1);
    const frame = receiver.messages[0]!;
    // Security events on facility 4, critical as severity 2: <34>.
    expect(frame).toMatch(/^<34>1 \S+ logbook logbook - device-event - CEF:0\|Logbook\|Logbook\|1\|/);
    expect(frame).toContain('|Disk \\| failed = yes|9|');
    expect(frame).toContain(`cs1=${tenant.orgId}`);
    expect(frame).toContain(`deviceExternalId=${agent.deviceId}`);
    expect(frame).toContain('msg=Disk | failed \\= yes');
    // The receiver has the frame before the delivery records its success: wait for the record.
    await eventually(async () => streamOf(await status(stream.id), 'device-events').lagRows === 0);
    expect(streamOf(await status(stream.id), 'device-events').lastError).toBeUndefined();

    // A replay of the stream from a chosen key delivers it again.
    const seq = Number(/cn1=(\d+)/.exec(frame)![1]);
    const replay = await t.api.request('POST', `/api/v1/audit-streams/${stream.id}/replay`, {
      token: tenant.partnerToken,
      body: { orgId: tenant.orgId, fromSeq: seq - 1, stream: 'device-events' },
    });
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(streamOf(replay.body, 'device-events').lastDeliveredSeq).toBe(seq - 2);
    await receiver.waitFor(2);
    expect(receiver.messages[1]).toBe(frame);
  });

  it('numbers no log of an organization no destination streams it to: no head, no key, no lock', async () => {
    const other = await createTenant(t.api, 'Unstreamed');
    const device = await enrollDevice(t.api, other, 'quiet-1');
    expect((await submitLogs(t.api, device, [logEntry(0), logEntry(1)])).status).toBe(201);
    expect((await submitEvents(t.api, device, [deviceEvent(0, { eventId: `q-${randomUUID()}` })])).status).toBe(200);
    const { rows } = await t.db.admin.query<{ keyed: number; total: number; heads: number }>(
      `SELECT (SELECT count(stream_seq) FROM agent_logs WHERE org_id = :orgId::uuid)
            + (SELECT count(stream_seq) FROM device_event_logs WHERE org_id = :orgId::uuid) AS keyed,
              (SELECT count(*) FROM agent_logs WHERE org_id = :orgId::uuid)
            + (SELECT count(*) FROM device_event_logs WHERE org_id = :orgId::uuid) AS total,
              (SELECT count(*) FROM log_stream_heads WHERE org_id = :orgId::uuid) AS heads`,
      { orgId: other.orgId },
    );
    expect(rows[0]).toEqual({ keyed: 0, total: 3, heads: 0 });
  });

  it('refuses a replay of a stream the destination does not receive, naming the field, and changes nothing', async () => {
    const receiver = local.keep(await startSyslogReceiver());
    const stream = await createStream({ type: 'syslog-tcp', format: 'rfc5424', endpoint: receiver.endpoint });
    const reply = await t.api.request('POST', `/api/v1/audit-streams/${stream.id}/replay`, {
      token: tenant.partnerToken,
      body: { orgId: tenant.orgId, fromSeq: 1, stream: 'agent-logs' },
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toContain('stream');
    const { rows } = await t.db.admin.query(
      `SELECT 1 FROM audit_stream_cursors WHERE stream_id = :id::uuid AND source = 'agent-logs'`,
      { id: stream.id },
    );
    expect(rows).toHaveLength(0);
    const bad = await t.api.request('POST', '/api/v1/audit-streams', {
      token: tenant.partnerToken,
      body: {
        name: 'x',
        orgId: tenant.orgId,
        type: 'syslog-tcp',
        format: 'cef',
        endpoint: receiver.endpoint,
        streams: ['audit', 'metrics'],
      },
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('streams');
  });

  it('starts a stream a change adds at its head: only the entries stored after it, as RFC 5424 with the entry in structured data', async () => {
    const receiver = local.keep(await startSyslogReceiver());
    const stream = await createStream({
      type: 'syslog-tcp',
      format: 'rfc5424',
      endpoint: receiver.endpoint,
      filter: { actions: ['nothing.matches'] },
    });
    expect((await submitLogs(t.api, agent, [logEntry(0, { message: 'before' })])).status).toBe(201);
    const changed = await t.api.request('PATCH', `/api/v1/audit-streams/${stream.id}`, {
      token: tenant.partnerToken,
      body: { streams: ['audit', 'agent-logs'] },
    });
    expect(changed.status).toBe(200);
    expect(streamOf(await status(stream.id), 'agent-logs')).toEqual(
      expect.objectContaining({ lastDeliveredSeq: await head('agent-logs'), lagRows: 0 }),
    );
    const entry = logEntry(0, { level: 'error', component: 'upd]ater', message: 'after' });
    expect((await submitLogs(t.api, agent, [entry])).status).toBe(201);
    await receiver.waitFor(1);
    // Facility 1 (user-level), severity 3 (error): <11>; the audit rows are filtered out.
    const frame = receiver.messages[0]!;
    expect(frame).toMatch(/^<11>1 \S+ logbook logbook - agent-log \[logbook@32473 type="agent-log" /);
    expect(frame).toContain(`deviceId="${agent.deviceId}"`);
    expect(frame).toContain(`seq="${await head('agent-logs')}"`);
    expect(frame).toContain('component="upd\\]ater"');
    expect(JSON.parse(frame.slice(frame.indexOf('] {') + 2)).message).toBe('after');
    expect(receiver.messages).toHaveLength(1);
  });
});
