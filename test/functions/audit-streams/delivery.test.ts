import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Certificate, selfSignedCertificate } from '#infra/local/self-signed-certificate.ts';
import { deliverCursor } from '#shared/audit-streams/delivery.ts';
import { selectDeliverableStream } from '#shared/audit-streams/store.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type Receiver, startHttpsReceiver, startSyslogReceiver } from '#test/support/siem-receivers.ts';
import { createTenant, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let root: string;
let cert: Certificate;
const receivers: Receiver[] = [];

beforeAll(async () => {
  process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
  tenant = await createTenant(t.api, 'Streamed');
  root = await platformAdmin();
  cert = selfSignedCertificate();
});
afterAll(async () => {
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
  await Promise.all(receivers.map((receiver) => receiver.close()));
});

/** A new organization of the tenant's partner, so each test reads a trail of its own. */
async function newOrganization(name: string): Promise<string> {
  const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: `${name} ${randomUUID().slice(0, 8)}`, site: { name: 'HQ', timezone: 'UTC' } },
  });
  expect(reply.status).toBe(201);
  return reply.body.id;
}

/** `count` user.login rows reported into the organization's trail, with values a receiver must get back intact. */
async function report(orgId: string, count: number, action = 'user.login') {
  const events = Array.from({ length: count }, (_, n) => ({
    orgId,
    actorType: 'user',
    actorId: randomUUID(),
    actorEmail: `ada+${n}@example.test`,
    action,
    resourceName: 'quote " backslash \\ bracket ] pipe | equals = newline \n end',
    details: { n },
  }));
  const reply = await t.api.request('POST', '/api/v1/audit-logs/events', { token: root, body: { events } });
  expect(reply.status).toBe(201);
}

async function head(orgId: string): Promise<number> {
  const { rows } = await t.db.admin.query<{ seq: number }>(
    'SELECT seq FROM audit_chain_heads WHERE org_id = :orgId::uuid',
    { orgId },
  );
  return rows[0]?.seq ?? 0;
}

async function createStream(body: Record<string, unknown>) {
  const reply = await t.api.request('POST', '/api/v1/audit-streams', {
    token: tenant.partnerToken,
    body: { name: `SIEM ${randomUUID().slice(0, 8)}`, ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; secret?: string };
}

const status = async (id: string) =>
  (await t.api.request('GET', `/api/v1/audit-streams/${id}/status`, { token: tenant.partnerToken })).body
    .organizations as {
    orgId: string;
    lastDeliveredSeq: number;
    lagRows: number;
    lagSeconds: number;
    lastError?: string;
  }[];

/** The (orgId, seq, checksum, prevChecksum) of a delivered record, read from its JSON. */
const fields = (json: Record<string, any>) => ({
  orgId: json.orgId as string,
  seq: json.seq as number,
  checksum: json.checksum as string,
  prevChecksum: json.prevChecksum as string | null,
  action: json.action as string,
});

/** The record inside a syslog frame: the JSON MSG after the header and structured data. */
const syslogJson = (frame: string) => JSON.parse(frame.slice(frame.indexOf('{"type"')));

/** Every record in seq order, each linking to the one before: nothing missing, nothing doubled. */
function expectContinuous(records: ReturnType<typeof fields>[], firstSeq: number, lastSeq: number) {
  expect(records.map((record) => record.seq)).toEqual(
    Array.from({ length: lastSeq - firstSeq + 1 }, (_, n) => firstSeq + n),
  );
  for (let n = 1; n < records.length; n++) expect(records[n]!.prevChecksum).toBe(records[n - 1]!.checksum);
}

describe('syslog over TLS', () => {
  it('delivers the rows written after its creation, in seq order, octet-counted RFC 5424 with the row in structured data', async () => {
    const orgId = await newOrganization('TLS');
    await report(orgId, 2);
    const before = await head(orgId);
    const receiver = await startSyslogReceiver(cert, 'localhost');
    receivers.push(receiver);
    const stream = await createStream({
      orgId,
      type: 'syslog-tls',
      format: 'rfc5424',
      endpoint: receiver.endpoint,
      caCertificate: cert.cert,
    });
    await report(orgId, 5);
    // The destination's own creation is audited after its head was taken: 1 + 5 rows.
    await receiver.waitFor(6);
    const records = receiver.messages.map((frame) => fields(syslogJson(frame)));
    expectContinuous(records, before + 1, await head(orgId));
    expect(records[0]!.action).toBe('audit_stream.create');
    const frame = receiver.messages[1]!;
    expect(frame).toMatch(
      /^<110>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z logbook logbook - user\.login \[logbook@32473 /,
    );
    expect(frame).toContain(`orgId="${orgId}" seq="${before + 2}"`);
    expect(frame).toContain('resourceName="quote \\" backslash \\\\ bracket \\] pipe | equals = newline \n end"');
    await eventually(async () => (await status(stream.id))[0]!.lagRows === 0);
    expect(await status(stream.id)).toEqual([
      expect.objectContaining({ orgId, lastDeliveredSeq: await head(orgId), lagRows: 0, lagSeconds: 0 }),
    ]);
  });

  it('refuses a receiver whose certificate it does not trust, keeps the rows and delivers them once trusted', async () => {
    const orgId = await newOrganization('Untrusted');
    const receiver = await startSyslogReceiver(cert, 'localhost');
    receivers.push(receiver);
    const stream = await createStream({ orgId, type: 'syslog-tls', format: 'cef', endpoint: receiver.endpoint });
    await report(orgId, 2);
    await eventually(async () => (await status(stream.id))[0]!.lastError !== undefined);
    const [failing] = await status(stream.id);
    expect(failing!.lastError).toMatch(/certificate/i);
    expect(failing!.lagRows).toBe(3);
    expect(receiver.messages).toEqual([]);
    const patched = await t.api.request('PATCH', `/api/v1/audit-streams/${stream.id}`, {
      token: tenant.partnerToken,
      body: { caCertificate: cert.cert },
    });
    expect(patched.status).toBe(200);
    // The change is audited too: 3 rows, then the update.
    await receiver.waitFor(4);
    expect(receiver.messages[1]).toMatch(/CEF:0\|Logbook\|Logbook\|1\|user\.login\|user\.login\|3\|/);
    expect(receiver.messages[1]).toContain('cs5=quote " backslash \\\\ bracket ] pipe | equals \\= newline \\n end');
  });
});

describe('syslog over TCP', () => {
  it('keeps its cursor while the receiver is down and catches up in order when it is back', async () => {
    const orgId = await newOrganization('TCP');
    const receiver = await startSyslogReceiver();
    receivers.push(receiver);
    const stream = await createStream({ orgId, type: 'syslog-tcp', format: 'ndjson', endpoint: receiver.endpoint });
    const start = await head(orgId);
    await receiver.waitFor(1);
    await eventually(async () => (await status(stream.id))[0]!.lagRows === 0);
    await receiver.down();
    await report(orgId, 4);
    await eventually(async () => (await status(stream.id))[0]!.lastError !== undefined);
    const [down] = await status(stream.id);
    expect(down).toEqual(expect.objectContaining({ lastDeliveredSeq: start, lagRows: 4 }));
    expect(down!.lastError).toMatch(/ECONNREFUSED/);
    await receiver.up();
    await receiver.waitFor(5);
    const records = receiver.messages.map((frame) => fields(syslogJson(frame)));
    expectContinuous(records, start, await head(orgId));
    await eventually(async () => (await status(stream.id))[0]!.lastError === undefined);
  });
});

describe('HTTPS', () => {
  it('POSTs signed NDJSON batches; a receiver answering 503 gets them again until it takes them', async () => {
    const orgId = await newOrganization('HTTPS');
    const receiver = await startHttpsReceiver(cert);
    receivers.push(receiver);
    receiver.fail(true);
    const start = await head(orgId);
    const stream = await createStream({
      orgId,
      type: 'https',
      format: 'ocsf',
      endpoint: receiver.endpoint,
      caCertificate: cert.cert,
    });
    expect(stream.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await report(orgId, 3);
    await eventually(async () => (await status(stream.id))[0]!.lastError !== undefined);
    expect((await status(stream.id))[0]).toEqual(
      expect.objectContaining({ lastDeliveredSeq: start, lagRows: 4, lastError: expect.stringContaining('HTTP 503') }),
    );
    receiver.fail(false);
    await receiver.waitFor(4);
    const records = receiver.messages.map((line) => {
      const ocsf = JSON.parse(line);
      return fields(ocsf.unmapped);
    });
    expectContinuous(records, start + 1, await head(orgId));
    const login = JSON.parse(receiver.messages[1]!);
    expect(login).toEqual(
      expect.objectContaining({ class_uid: 3002, activity_id: 1, type_uid: 300201, category_uid: 3 }),
    );
    const request = receiver.requests[0]!;
    const timestamp = request.headers['x-logbook-timestamp'] as string;
    const expected = createHmac('sha256', stream.secret!).update(`${timestamp}.${request.body}`).digest('hex');
    expect(request.headers['x-logbook-signature']).toBe(`sha256=${expected}`);
    expect(request.headers['content-type']).toBe('application/x-ndjson');
  });

  /** An HTTPS destination of a new organization whose receiver holds the first post: its delivery holds the cursor. */
  async function heldDestination(name: string) {
    const orgId = await newOrganization(name);
    const receiver = await startHttpsReceiver(cert);
    receivers.push(receiver);
    const held = receiver.hold();
    const start = await head(orgId);
    const stream = await createStream({
      orgId,
      type: 'https',
      format: 'ndjson',
      endpoint: receiver.endpoint,
      caCertificate: cert.cert,
    });
    await held.arrived;
    return { orgId, receiver, held, start, stream };
  }

  it('a delivery that finds the cursor held marks it, and the holder delivers what was written meanwhile before it lets go', async () => {
    // The destination's creation row arms its delivery, whose post the receiver holds: that delivery holds the cursor.
    const { orgId, receiver, held, start, stream } = await heldDestination('Held');
    await report(orgId, 3);
    // A delivery of another process finds the cursor held: it marks it instead of waiting.
    const destination = (await selectDeliverableStream(t.db.admin, stream.id))!;
    expect(await deliverCursor(t.db.admin, destination, orgId)).toBe('busy');
    const mark = async () =>
      (
        await t.db.admin.query<{ pending: boolean }>(
          'SELECT pending FROM audit_stream_cursors WHERE stream_id = :id::uuid AND org_id = :orgId::uuid',
          { id: stream.id, orgId },
        )
      ).rows[0]!.pending;
    expect(await mark()).toBe(true);
    held.release();
    await receiver.waitFor(4);
    expectContinuous(
      receiver.messages.map((line) => fields(JSON.parse(line))),
      start + 1,
      await head(orgId),
    );
    await eventually(async () => (await status(stream.id))[0]!.lagRows === 0);
    expect(await mark()).toBe(false);
  });

  it('a receiver slower than the lease keeps the cursor held by its delivery: no second delivery claims it', async () => {
    const restore = { lease: process.env.AUDIT_STREAM_LEASE_SECONDS, timeout: process.env.AUDIT_STREAM_TIMEOUT_MS };
    process.env.AUDIT_STREAM_LEASE_SECONDS = '3';
    process.env.AUDIT_STREAM_TIMEOUT_MS = '60000';
    try {
      // The creation row's delivery posts it; the receiver takes longer than the lease to answer.
      const { orgId, receiver, held, start, stream } = await heldDestination('Slow');
      const lease = () =>
        t.db.admin.query<{ until: Date; passed: boolean }>(
          `SELECT leased_until AS until, leased_until < now() AS passed FROM audit_stream_cursors
            WHERE stream_id = :id::uuid AND org_id = :orgId::uuid`,
          { id: stream.id, orgId },
        );
      const claimed = (await lease()).rows[0]!.until;
      // The claim's own lease has run out, and the delivery still holds the cursor: its heartbeat extended it.
      await eventually(async () => {
        const { rows } = await t.db.admin.query<{ out: boolean }>('SELECT now() > :claimed::timestamptz AS out', {
          claimed,
        });
        return rows[0]!.out;
      });
      expect((await lease()).rows[0]).toEqual(expect.objectContaining({ passed: false }));
      await report(orgId, 2);
      // Another process's delivery finds it held: it marks it and sends nothing.
      const destination = (await selectDeliverableStream(t.db.admin, stream.id))!;
      expect(await deliverCursor(t.db.admin, destination, orgId)).toBe('busy');
      held.release();
      await receiver.waitFor(3);
      await eventually(async () => (await status(stream.id))[0]!.lagRows === 0);
      expectContinuous(
        receiver.messages.map((line) => fields(JSON.parse(line))),
        start + 1,
        await head(orgId),
      );
    } finally {
      for (const [name, value] of [
        ['AUDIT_STREAM_LEASE_SECONDS', restore.lease],
        ['AUDIT_STREAM_TIMEOUT_MS', restore.timeout],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
  });

  it('two destinations of an organization, one filtered, each get their rows once and in order from the pages they share', async () => {
    const orgId = await newOrganization('Both');
    const all = await startHttpsReceiver(cert);
    const logins = await startSyslogReceiver();
    receivers.push(all, logins);
    const start = await head(orgId);
    await createStream({ orgId, type: 'https', format: 'ndjson', endpoint: all.endpoint, caCertificate: cert.cert });
    await createStream({
      orgId,
      type: 'syslog-tcp',
      format: 'ndjson',
      endpoint: logins.endpoint,
      filter: { categories: ['authentication'] },
    });
    await report(orgId, 3);
    await report(orgId, 2, 'alert.created');
    await report(orgId, 2);
    const end = await head(orgId);
    await all.waitFor(end - start);
    await logins.waitFor(5);
    expectContinuous(
      all.messages.map((line) => fields(JSON.parse(line))),
      start + 1,
      end,
    );
    const sent = logins.messages.map((frame) => fields(syslogJson(frame)));
    expect(sent.map((record) => record.action)).toEqual(Array(5).fill('user.login'));
    expect(sent.map((record) => record.seq)).toEqual([...sent.map((record) => record.seq)].sort((a, b) => a - b));
    expect(new Set(sent.map((record) => record.seq)).size).toBe(5);
  });

  it('replays from a chosen seq, and sends only the rows its filter lets through', async () => {
    const orgId = await newOrganization('Replay');
    const receiver = await startHttpsReceiver(cert);
    receivers.push(receiver);
    const stream = await createStream({
      orgId,
      type: 'https',
      format: 'ndjson',
      endpoint: receiver.endpoint,
      caCertificate: cert.cert,
      filter: { categories: ['authentication'] },
    });
    await report(orgId, 2);
    await report(orgId, 1, 'alert.created');
    await report(orgId, 1, 'user.logout');
    await receiver.waitFor(3);
    await eventually(async () => (await status(stream.id))[0]!.lagRows === 0);
    const sent = receiver.messages.map((line) => fields(JSON.parse(line)));
    expect(sent.map((record) => record.action)).toEqual(['user.login', 'user.login', 'user.logout']);
    const firstSeq = sent[0]!.seq;
    const replay = await t.api.request('POST', `/api/v1/audit-streams/${stream.id}/replay`, {
      token: tenant.partnerToken,
      body: { orgId, fromSeq: firstSeq },
    });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(expect.objectContaining({ orgId, lastDeliveredSeq: firstSeq - 1 }));
    await receiver.waitFor(6);
    expect(receiver.messages.slice(3).map((line) => fields(JSON.parse(line)).seq)).toEqual(sent.map((r) => r.seq));
  });
});
