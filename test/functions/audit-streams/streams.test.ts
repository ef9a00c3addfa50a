import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useResolver } from '#shared/outbound/address.ts';
import { useApi } from '#test/support/api.ts';
import { type Receiver, startSyslogReceiver } from '#test/support/siem-receivers.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const STREAMS = '/api/v1/audit-streams';
const t = useApi();
let a: Tenant;
let b: Tenant;
let receiver: Receiver;

beforeAll(async () => {
  a = await createTenant(t.api, 'Owner');
  b = await createTenant(t.api, 'Other');
  receiver = await startSyslogReceiver();
  useResolver(async (name) => {
    if (name === 'siem.example.com') return ['93.184.215.14'];
    if (name === 'inside.example.com') return ['10.20.30.40'];
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  });
});
afterAll(async () => {
  useResolver();
  await receiver.close();
});
afterEach(() => {
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
});

const create = (body: Record<string, unknown>, token = a.partnerToken, headers?: Record<string, string>) =>
  t.api.request('POST', STREAMS, { token, body: { name: 'SIEM', ...body }, headers });

const stored = async (partnerId = a.partnerId) =>
  (
    await t.db.admin.query<{ id: string; endpoint: string; secret: string | null; secretSealed: boolean }>(
      `SELECT id, endpoint, secret, secret_sealed AS "secretSealed" FROM audit_streams
        WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY created_at`,
      { partnerId },
    )
  ).rows;

const auditRows = async (resourceId: string) =>
  (
    await t.db.admin.query<{ action: string; orgId: string; details: Record<string, unknown> }>(
      `SELECT action, org_id::text AS "orgId", details FROM audit_logs WHERE resource_id = :id::uuid ORDER BY seq`,
      { id: resourceId },
    )
  ).rows;

const syslog = { type: 'syslog-tcp', format: 'rfc5424', endpoint: 'siem.example.com:6514' };

describe('creating a destination', () => {
  it.each([
    [{ ...syslog, endpoint: 'siem.example.com' }, 'endpoint', 'give host:port'],
    [{ ...syslog, endpoint: 'siem.example.com:70000' }, 'endpoint', 'the port is 1 to 65535'],
    [{ ...syslog, endpoint: '169.254.169.254:514' }, 'endpoint', 'Refused endpoint: link-local address'],
    [{ ...syslog, endpoint: '127.0.0.1:514' }, 'endpoint', 'Refused endpoint: loopback address'],
    [{ ...syslog, endpoint: '[fd00::5]:514' }, 'endpoint', 'Refused endpoint: private address'],
    [{ ...syslog, endpoint: 'metadata.google.internal:80' }, 'endpoint', 'Refused endpoint: internal name'],
    [{ ...syslog, endpoint: 'inside.example.com:514' }, 'endpoint', 'Refused endpoint: private address'],
    [{ ...syslog, secret: 'a-secret-of-sixteen+' }, 'secret', 'Only https and splunk-hec destinations take a secret'],
    [{ ...syslog, caCertificate: 'not a certificate' }, 'caCertificate', 'Not a PEM certificate'],
    [{ type: 'https', format: 'ndjson', endpoint: 'http://siem.example.com/x' }, 'endpoint', 'http://'],
    [{ type: 'https', format: 'ndjson', endpoint: 'https://10.0.0.1/x' }, 'endpoint', 'private address'],
    [{ type: 'https', format: 'ndjson', endpoint: 'https://u:p@siem.example.com/' }, 'endpoint', 'credentials'],
    [{ type: 'splunk-hec', format: 'ndjson', endpoint: 'https://siem.example.com' }, 'secret', 'collector token'],
    [{ type: 's3', format: 'ndjson', endpoint: 'Not_A_Bucket' }, 'endpoint', 'bucket/prefix'],
    [{ ...syslog, format: 'leef' }, 'format', ''],
    [{ ...syslog, filter: { categories: ['nope'] } }, 'filter.categories.0', ''],
    [{ ...syslog, fromSeq: 0 }, 'fromSeq', ''],
  ])('refuses %j with a 400 naming %s; nothing stored', async (body, field, message) => {
    const reply = await create({ orgId: a.orgId, ...body });
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('VALIDATION_FAILED');
    expect(reply.body.error.details).toContainEqual(
      expect.objectContaining({ path: `body.${field}`, message: expect.stringContaining(message) }),
    );
    expect(await stored()).toEqual([]);
  });

  it("in Lambda, takes an S3 bucket only among the deployment's auditStreamBuckets", async () => {
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'logbook-audit-streams';
    process.env.AUDIT_STREAM_BUCKETS = 'acme-audit-archive';
    try {
      const other = await create({ orgId: a.orgId, type: 's3', format: 'ndjson', endpoint: 'someone-else/trail' });
      expect(other.status).toBe(400);
      expect(other.body.error.details).toContainEqual(
        expect.objectContaining({ path: 'body.endpoint', message: expect.stringContaining('auditStreamBuckets') }),
      );
      expect(await stored()).toEqual([]);
      const named = await create({
        orgId: a.orgId,
        type: 's3',
        format: 'ndjson',
        endpoint: 'acme-audit-archive/trail',
      });
      expect(named.status).toBe(201);
      await t.api.request('DELETE', `${STREAMS}/${named.body.id}`, { token: a.partnerToken });
    } finally {
      delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      delete process.env.AUDIT_STREAM_BUCKETS;
    }
  });

  it('refuses a destination naming no owner, or both', async () => {
    expect((await create(syslog)).body.error.details[0].path).toBe('body.orgId');
    const both = await create({ ...syslog, orgId: a.orgId, availability: 'partner' });
    expect(both.status).toBe(400);
    expect(both.body.error.details[0].path).toBe('body.orgId');
  });

  it('keeps an https key sealed and write-only: generated, shown once, never returned nor audited', async () => {
    const reply = await create({
      orgId: a.orgId,
      type: 'https',
      format: 'ocsf',
      endpoint: 'https://siem.example.com/in',
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual(
      expect.objectContaining({ orgId: a.orgId, availability: 'organization', type: 'https', hasSecret: true }),
    );
    const key = reply.body.secret as string;
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const [row] = await stored();
    expect(row!.secretSealed).toBe(true);
    expect(row!.secret).toMatch(/^v1\./);
    expect(row!.secret).not.toContain(key);
    const read = await t.api.request('GET', `${STREAMS}/${reply.body.id}`, { token: a.partnerToken });
    expect(read.body).not.toHaveProperty('secret');
    const listed = await t.api.request('GET', STREAMS, { token: a.partnerToken });
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([reply.body.id]);
    expect(JSON.stringify(listed.body)).not.toContain(key);
    const audited = await auditRows(reply.body.id);
    expect(audited).toEqual([expect.objectContaining({ action: 'audit_stream.create', orgId: a.orgId })]);
    expect(JSON.stringify(audited)).not.toContain(key);
    const rotated = await t.api.request('PATCH', `${STREAMS}/${reply.body.id}`, {
      token: a.partnerToken,
      body: { rotateSecret: true },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated.body.secret).not.toBe(key);
    expect((await t.api.request('DELETE', `${STREAMS}/${reply.body.id}`, { token: a.partnerToken })).status).toBe(204);
    expect((await auditRows(reply.body.id)).map((r) => r.action)).toEqual([
      'audit_stream.create',
      'audit_stream.update',
      'audit_stream.delete',
    ]);
    expect((await t.api.request('GET', `${STREAMS}/${reply.body.id}`, { token: a.partnerToken })).status).toBe(404);
  });

  it('honours an Idempotency-Key: the same request again answers the same destination, stored once', async () => {
    const headers = { 'idempotency-key': 'stream-create-1' };
    const first = await create({ ...syslog, orgId: a.orgId }, a.partnerToken, headers);
    const again = await create({ ...syslog, orgId: a.orgId }, a.partnerToken, headers);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await stored()).map((row) => row.id)).toEqual([first.body.id]);
    await t.api.request('DELETE', `${STREAMS}/${first.body.id}`, { token: a.partnerToken });
  });

  it('takes loopback endpoints only under the local-development allowance', async () => {
    const local = { ...syslog, orgId: a.orgId, endpoint: receiver.endpoint };
    expect((await create(local)).status).toBe(400);
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    const created = await create(local);
    expect(created.status).toBe(201);
    await t.api.request('DELETE', `${STREAMS}/${created.body.id}`, { token: a.partnerToken });
  });
});

describe('tenancy', () => {
  it("answers another tenant's destination as absent, and lets organization users manage only their own", async () => {
    const partnerWide = await create({ ...syslog, availability: 'partner' });
    expect(partnerWide.status).toBe(201);
    expect(partnerWide.body).toEqual(expect.objectContaining({ orgId: null, availability: 'partner' }));
    // One audit row in each organization of the partner.
    expect((await auditRows(partnerWide.body.id)).map((row) => row.orgId)).toEqual([a.orgId]);
    for (const [method, path] of [
      ['GET', `${STREAMS}/${partnerWide.body.id}`],
      ['GET', `${STREAMS}/${partnerWide.body.id}/status`],
      ['DELETE', `${STREAMS}/${partnerWide.body.id}`],
      ['POST', `${STREAMS}/${partnerWide.body.id}/test`],
    ] as const) {
      const reply = await t.api.request(method, path, { token: b.partnerToken });
      expect(reply.status).toBe(404);
      expect(JSON.stringify(reply.body)).not.toContain(partnerWide.body.name);
    }
    expect((await create({ ...syslog, orgId: a.orgId }, b.partnerToken)).status).toBe(404);
    const orgAdmin = await orgUser(a.partnerId, a.orgId);
    expect((await create({ ...syslog, availability: 'partner' }, orgAdmin)).status).toBe(403);
    expect((await t.api.request('GET', `${STREAMS}/${partnerWide.body.id}`, { token: orgAdmin })).status).toBe(404);
    const own = await create({ ...syslog, orgId: a.orgId }, orgAdmin);
    expect(own.status).toBe(201);
    const viewer = await orgUser(a.partnerId, a.orgId, 'org_viewer');
    expect((await t.api.request('GET', STREAMS, { token: viewer })).status).toBe(403);
    const replayElsewhere = await t.api.request('POST', `${STREAMS}/${partnerWide.body.id}/replay`, {
      token: a.partnerToken,
      body: { orgId: b.orgId, fromSeq: 1 },
    });
    expect(replayElsewhere.status).toBe(400);
    expect(replayElsewhere.body.error.details[0].path).toBe('body.orgId');
    for (const id of [partnerWide.body.id, own.body.id])
      await t.api.request('DELETE', `${STREAMS}/${id}`, { token: a.partnerToken });
  });
});

describe('a test record', () => {
  it("is sent at once and answered rendered in the destination's format and in every format", async () => {
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    const created = await create({ orgId: a.orgId, type: 'syslog-tcp', format: 'cef', endpoint: receiver.endpoint });
    const reply = await t.api.request('POST', `${STREAMS}/${created.body.id}/test`, { token: a.partnerToken });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(expect.objectContaining({ format: 'cef', delivered: true }));
    expect(reply.body.line).toMatch(/^CEF:0\|Logbook\|Logbook\|1\|audit_stream\.test\|/);
    expect(reply.body.line).toContain(`cs1=${a.orgId} cn1Label=seq cn1=0 `);
    expect(Object.keys(reply.body.lines)).toEqual(['rfc5424', 'cef', 'ocsf', 'ndjson']);
    expect(JSON.parse(reply.body.lines.ndjson)).toEqual(expect.objectContaining({ seq: 0, orgId: a.orgId }));
    await receiver.waitFor(1);
    expect(receiver.messages.some((frame) => frame.endsWith(reply.body.line))).toBe(true);
    await receiver.down();
    const failed = await t.api.request('POST', `${STREAMS}/${created.body.id}/test`, { token: a.partnerToken });
    expect(failed.body).toEqual(
      expect.objectContaining({ delivered: false, error: expect.stringContaining('ECONNREFUSED') }),
    );
    await receiver.up();
    await t.api.request('DELETE', `${STREAMS}/${created.body.id}`, { token: a.partnerToken });
  });
});
