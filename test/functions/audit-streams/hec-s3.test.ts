import { randomUUID } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Certificate, selfSignedCertificate } from '#infra/local/self-signed-certificate.ts';
import { publishAnchor, witnessedAnchors, witnessStoreAt } from '#shared/audit-streams/witness.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type S3Stub, startS3Stub } from '#test/support/s3-stub.ts';
import { startHttpsReceiver } from '#test/support/siem-receivers.ts';
import { createTenant, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let root: string;
let cert: Certificate;
let s3: S3Stub;
const saved = { ...process.env };

beforeAll(async () => {
  s3 = await startS3Stub();
  Object.assign(process.env, {
    OUTBOUND_ALLOW_LOOPBACK: 'true',
    AUDIT_S3_ENDPOINT: s3.url,
    AWS_REGION: 'eu-central-1',
    AWS_ACCESS_KEY_ID: 'AKIDLOCALSTUB',
    AWS_SECRET_ACCESS_KEY: 'local-stub-secret',
  });
  tenant = await createTenant(t.api, 'Collected');
  root = await platformAdmin();
  cert = selfSignedCertificate();
});
afterAll(async () => {
  for (const name of [
    'OUTBOUND_ALLOW_LOOPBACK',
    'AUDIT_S3_ENDPOINT',
    'AWS_REGION',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
  ])
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  await s3.close();
});

async function report(orgId: string, count: number) {
  const events = Array.from({ length: count }, () => ({
    orgId,
    actorType: 'user',
    actorId: randomUUID(),
    action: 'user.login',
  }));
  const reply = await t.api.request('POST', '/api/v1/audit-logs/events', { token: root, body: { events } });
  expect(reply.status).toBe(201);
}

const lagRows = async (id: string) =>
  (await t.api.request('GET', `/api/v1/audit-streams/${id}/status`, { token: tenant.partnerToken })).body
    .organizations[0].lagRows as number;

describe('Splunk HTTP Event Collector', () => {
  it('posts each record as an event to /services/collector/event with the collector token', async () => {
    const receiver = await startHttpsReceiver(cert, '/services/collector/event');
    try {
      const created = await t.api.request('POST', '/api/v1/audit-streams', {
        token: tenant.partnerToken,
        body: {
          orgId: tenant.orgId,
          name: 'Splunk',
          type: 'splunk-hec',
          format: 'ocsf',
          endpoint: new URL(receiver.endpoint).origin,
          secret: '11111111-2222-3333-4444-555555555555',
          caCertificate: cert.cert,
        },
      });
      expect(created.status).toBe(201);
      expect(created.body).not.toHaveProperty('secret');
      await report(tenant.orgId, 2);
      await receiver.waitFor(3);
      expect(receiver.requests[0]!.headers.authorization).toBe('Splunk 11111111-2222-3333-4444-555555555555');
      const events = receiver.messages.map((line) => JSON.parse(line));
      expect(events[1]).toEqual(
        expect.objectContaining({
          host: 'logbook',
          sourcetype: 'logbook:audit:ocsf',
          time: expect.any(Number),
          event: expect.objectContaining({
            class_uid: 3002,
            metadata: expect.objectContaining({ tenant_uid: tenant.orgId }),
          }),
        }),
      );
      const seqs = events.map((event) => event.event.metadata.sequence as number);
      const first = seqs[0]!;
      expect(seqs).toEqual([first, first + 1, first + 2]);
    } finally {
      await receiver.close();
    }
  });
});

describe('Amazon S3', () => {
  it('puts gzipped NDJSON objects per organization and hour through the AWS SDK, named by their seq range', async () => {
    const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Bucketed', site: { name: 'HQ', timezone: 'UTC' } },
    });
    const orgId = org.body.id as string;
    const created = await t.api.request('POST', '/api/v1/audit-streams', {
      token: tenant.partnerToken,
      body: { orgId, name: 'Archive', type: 's3', format: 'ndjson', endpoint: 'audit-archive/logbook/trail' },
    });
    expect(created.status).toBe(201);
    await report(orgId, 4);
    await eventually(async () => (await lagRows(created.body.id)) === 0);
    const keys = [...s3.objects.keys()].filter((key) => key.startsWith(`audit-archive/logbook/trail/${orgId}/`));
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(/\/\d{4}\/\d\d\/\d\d\/\d\d\/\d+-\d+\.ndjson\.gz$/);
    const rows = keys
      .flatMap((key) => gunzipSync(s3.objects.get(key)!.body).toString('utf8').trim().split('\n'))
      .map((line) => JSON.parse(line))
      .sort((a, b) => a.seq - b.seq);
    expect(rows.map((row) => row.action)).toEqual(['audit_stream.create', ...Array(4).fill('user.login')]);
    for (let n = 1; n < rows.length; n++) {
      expect(rows[n].seq).toBe(rows[n - 1].seq + 1);
      expect(rows[n].prevChecksum).toBe(rows[n - 1].checksum);
    }
    expect(s3.objects.get(keys[0]!)!.headers['content-encoding']).toContain('gzip');
  });

  it('witnesses anchors as objects locked in compliance mode, never overwritten', async () => {
    const store = witnessStoreAt('s3://anchor-witness/logbook');
    const anchor = {
      orgId: tenant.orgId,
      seq: 7,
      checksum: 'c'.repeat(64),
      firstRetainedSeq: 1,
      boundaryChecksum: null,
      orgCount: 1,
      orgsDigest: 'd'.repeat(64),
      anchoredAt: '2026-11-27T09:00:00.000Z',
      keyId: '0123456789abcdef',
      signature: 'c2lnbmF0dXJl',
    };
    await publishAnchor(store, anchor);
    const [key] = [...s3.objects.keys()].filter((name) => name.startsWith('anchor-witness/'));
    expect(key).toBe(`anchor-witness/logbook/${tenant.orgId}/00000000000000000007-2026-11-27T090000000Z.json`);
    const headers = s3.objects.get(key!)!.headers;
    expect(headers['x-amz-object-lock-mode']).toBe('COMPLIANCE');
    const until = Date.parse(headers['x-amz-object-lock-retain-until-date']!);
    expect(Math.round((until - Date.now()) / 86_400_000)).toBe(400);
    await expect(publishAnchor(store, anchor)).rejects.toThrow(/PreconditionFailed|pre-conditions/);
    expect(await store.list('')).toEqual([tenant.orgId]);
    expect(await witnessedAnchors(store, tenant.orgId)).toEqual([anchor]);
  });
});
