import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { zeroUuid } from '#shared/audit/writer.ts';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const EVENTS = '/api/v1/audit-logs/events';
const ORGS = '/api/v1/orgs/organizations';

const t = useApi();
let a: Tenant;
let b: Tenant;
let service: { id: string; key: string };
let root: string;

/** Creates an API key of the tenant's organization through the API. */
async function createKey(tenant: Tenant, role: string) {
  const reply = await t.api.request('POST', `${ORGS}/${tenant.orgId}/api-keys`, {
    token: tenant.partnerToken,
    body: { name: `${role} key`, role },
  });
  if (reply.status !== 201) throw new Error(`api key: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body as { id: string; key: string };
}

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  service = await createKey(a, 'org_service');
  root = await platformAdmin();
});

/** A user.login as the login service reports it; `scenario` marks the rows of one test. */
const login = (orgId: string, scenario: string, extra: Record<string, unknown> = {}) => ({
  orgId,
  actorType: 'user',
  actorId: randomUUID(),
  actorEmail: 'ada@alpha.test',
  action: 'user.login',
  ipAddress: '203.0.113.9',
  userAgent: 'Mozilla/5.0',
  ...extra,
  details: { scenario, ...(extra.details as object | undefined) },
});

const ingest = (credential: string, events: unknown[], headers?: Record<string, string>) =>
  t.api.request('POST', EVENTS, { token: credential, body: { events }, headers });

interface StoredRow {
  id: string;
  orgId: string;
  seq: number;
  timestamp: string;
  actorType: string;
  actorId: string;
  action: string;
  details: Record<string, unknown>;
}

/** The rows of a scenario, as stored, in chain order per organization. */
async function rowsOf(scenario: string): Promise<StoredRow[]> {
  const { rows } = await t.db.admin.query<StoredRow & Record<string, unknown>>(
    `SELECT id::text AS id, org_id::text AS "orgId", seq, to_char(timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS timestamp,
            actor_type::text AS "actorType", actor_id::text AS "actorId", action, details
       FROM audit_logs WHERE details->>'scenario' = :scenario::text ORDER BY org_id, seq`,
    { scenario },
  );
  return rows;
}

function expectError(reply: Reply, status: number, code: string) {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({ error: { code, message: expect.any(String) } });
}

describe('reporting audit events', () => {
  it('a service key reports a late user.login: 201, stored with its own timestamp and who reported it', async () => {
    const event = login(a.orgId, 'late-login', { timestamp: '2019-03-01T08:15:00.123456Z' });
    const reply = await ingest(service.key, [event]);
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({ received: 1, ids: [expect.any(String)] });
    expect(await rowsOf('late-login')).toEqual([
      expect.objectContaining({
        id: reply.body.ids[0],
        orgId: a.orgId,
        timestamp: '2019-03-01T08:15:00.123456Z',
        actorType: 'user',
        actorId: event.actorId,
        action: 'user.login',
        details: {
          scenario: 'late-login',
          reportedBy: { actorType: 'api_key', id: service.id },
          reportedAt: expect.any(String),
        },
      }),
    ]);
  });

  it('seals rows in request order whatever their timestamps, and the chain still verifies', async () => {
    const times = ['2024-05-01T00:00:00Z', '2018-01-01T00:00:00Z', '2021-07-15T12:00:00Z'];
    const reply = await ingest(
      service.key,
      times.map((timestamp, index) => login(a.orgId, 'order', { timestamp, details: { index } })),
    );
    expect(reply.status).toBe(201);
    const rows = await rowsOf('order');
    expect(rows.map((row) => row.id)).toEqual(reply.body.ids);
    expect(rows.map((row) => row.details.index)).toEqual([0, 1, 2]);
    expect(rows.map((row) => row.seq - rows[0]!.seq)).toEqual([0, 1, 2]);
    expect(await verifyChain(t.db.admin, a.orgId)).toMatchObject({ ok: true });
  });

  it('stores a non-UUID actorId as the zero UUID and keeps the original in details.rawActorId', async () => {
    const reply = await ingest(service.key, [
      login(a.orgId, 'raw-actor', {
        actorType: 'system',
        actorId: 'policy-engine',
        action: 'automation.policy.evaluate',
      }),
    ]);
    expect(reply.status).toBe(201);
    expect(await rowsOf('raw-actor')).toEqual([
      expect.objectContaining({
        actorType: 'system',
        actorId: zeroUuid,
        details: expect.objectContaining({ rawActorId: 'policy-engine' }),
      }),
    ]);
  });

  it('keeps ids in any UUID form as given (not only RFC 4122 variants), and every reading format answers them', async () => {
    // Hex in the 8-4-4-4-12 form, but neither a version nor an RFC 4122 variant: PostgreSQL's uuid takes it.
    const id = '12345678-1234-1234-1234-123456789abc';
    const reply = await ingest(service.key, [
      login(a.orgId, 'any-uuid', { actorId: id, resourceType: 'policy', resourceId: id, resourceName: 'P' }),
    ]);
    expect(reply.status).toBe(201);
    const entry = await t.api.request('GET', `/api/v1/audit-logs/logs/${reply.body.ids[0]}`, { token: a.orgToken });
    expect(entry.body).toMatchObject({ user: { id }, resource: { id } });
    const list = await t.api.request('GET', '/api/v1/audit-logs/search?q=any-uuid', { token: a.orgToken });
    expect(list.body.data).toEqual([expect.objectContaining({ user: expect.objectContaining({ id }) })]);
    const file = await t.api.request('GET', '/api/v1/audit-logs/export?q=any-uuid', { token: a.orgToken });
    expect(file.body.rows).toEqual([expect.objectContaining({ actorId: id, resourceId: id })]);
  });

  it('records the ingesting principal as reportedBy, even when the event claims another', async () => {
    const reply = await ingest(service.key, [
      login(a.orgId, 'spoofed-reporter', { details: { reportedBy: { actorType: 'system', id: 'nobody' } } }),
    ]);
    expect(reply.status).toBe(201);
    const [row] = await rowsOf('spoofed-reporter');
    expect(row!.details.reportedBy).toEqual({ actorType: 'api_key', id: service.id });
  });

  it('a platform admin reports into two organizations in one request; ids come back in request order', async () => {
    const orgs = [b.orgId, a.orgId, b.orgId, a.orgId];
    const reply = await ingest(
      root,
      orgs.map((orgId, index) => login(orgId, 'two-orgs', { details: { index } })),
    );
    expect(reply.status).toBe(201);
    expect(reply.body.received).toBe(4);
    const rows = await rowsOf('two-orgs');
    const byId = new Map(rows.map((row) => [row.id, row]));
    const stored = reply.body.ids.map((id: string) => [byId.get(id)?.orgId, byId.get(id)?.details.index]);
    expect(stored).toEqual(orgs.map((orgId, index) => [orgId, index]));
    expect(rows[0]!.details.reportedBy).toEqual({ actorType: 'user', id: expect.any(String) });
    expect(await verifyChain(t.db.admin, a.orgId)).toMatchObject({ ok: true });
    expect(await verifyChain(t.db.admin, b.orgId)).toMatchObject({ ok: true });
  });

  it("a platform admin still reports late events into a soft-deleted organization's trail", async () => {
    const org = await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Gone Corp' } });
    expect((await t.api.request('DELETE', `${ORGS}/${org.body.id}`, { token: a.partnerToken })).status).toBe(204);
    expect((await ingest(root, [login(org.body.id, 'deleted-org')])).status).toBe(201);
    expect(await rowsOf('deleted-org')).toHaveLength(1);
  });
});

describe('who may report', () => {
  it('a service key can read and change nothing else (403)', async () => {
    expectError(await t.api.request('GET', '/api/v1/devices', { token: service.key }), 403, 'FORBIDDEN');
    expectError(await t.api.request('GET', ORGS, { token: service.key }), 403, 'FORBIDDEN');
    expectError(await t.api.request('GET', `${ORGS}/${a.orgId}`, { token: service.key }), 403, 'FORBIDDEN');
    expectError(
      await t.api.request('PATCH', `${ORGS}/${a.orgId}`, { token: service.key, body: { name: 'Renamed' } }),
      403,
      'FORBIDDEN',
    );
  });

  it('an org_admin API key cannot report events (403) and nothing is stored', async () => {
    const admin = await createKey(a, 'org_admin');
    expectError(await ingest(admin.key, [login(a.orgId, 'admin-key')]), 403, 'FORBIDDEN');
    expect(await rowsOf('admin-key')).toEqual([]);
  });

  it("an organization's own administrator cannot create an org_service key (403); its partner can", async () => {
    const reply = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
      token: a.orgToken,
      body: { name: 'forger', role: 'org_service' },
    });
    expect(reply.status).toBe(403);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM api_keys WHERE name = 'forger'`);
    expect(rows).toEqual([]);
  });

  it('no partner or organization user can report events, not with audit:write claimed, not as org_service (403)', async () => {
    const claimed = await orgUser(a.partnerId, a.orgId, 'org_admin', { permissions: ['audit:write'] });
    const partnerClaimed = await partnerUser(a.partnerId, 'partner_admin', { permissions: ['audit:write'] });
    for (const token of [a.orgToken, claimed, a.partnerToken, partnerClaimed]) {
      expectError(await ingest(token, [login(a.orgId, 'user-report')]), 403, 'FORBIDDEN');
    }
    // org_service is for API keys only: a user token naming it is refused outright.
    expectError(
      await ingest(await orgUser(a.partnerId, a.orgId, 'org_service'), [login(a.orgId, 'user-report')]),
      401,
      'UNAUTHENTICATED',
    );
    expect(await rowsOf('user-report')).toEqual([]);
  });

  it("an event for another tenant's organization is 404 naming the event, and nothing of the request is stored", async () => {
    const reply = await ingest(service.key, [login(a.orgId, 'foreign-org'), login(b.orgId, 'foreign-org')]);
    expectError(reply, 404, 'NOT_FOUND');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.1.orgId' })]);
    expect(await rowsOf('foreign-org')).toEqual([]);
  });

  it('an event for an organization that does not exist is 404, also for a platform admin', async () => {
    const reply = await ingest(root, [login(randomUUID(), 'unknown-org')]);
    expectError(reply, 404, 'NOT_FOUND');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.0.orgId' })]);
  });
});

describe('validation', () => {
  it('a malformed event is 400 naming body.events.<index>.<field>, and nothing of the request is stored', async () => {
    const events = [0, 1, 2, 3, 4].map(() => login(a.orgId, 'malformed'));
    events[3] = { ...events[3]!, action: '' };
    const reply = await ingest(service.key, events);
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.3.action' })]);
    expect(await rowsOf('malformed')).toEqual([]);
  });

  it('an actorType outside the five of the specification is 400', async () => {
    const reply = await ingest(service.key, [login(a.orgId, 'bad-actor', { actorType: 'robot' })]);
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.0.actorType' })]);
  });

  it('an event without orgId, or with an unknown field, is 400', async () => {
    const { orgId: _, ...withoutOrg } = login(a.orgId, 'no-org');
    const missing = await ingest(service.key, [withoutOrg]);
    expect(missing.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.0.orgId' })]);
    const unknown = await ingest(service.key, [login(a.orgId, 'typo', { actor_id: 'x' })]);
    expect(unknown.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.0.actor_id' })]);
  });

  it('more than 500 events, no events, or a single event without the events array are 400', async () => {
    const tooMany = await ingest(
      service.key,
      Array.from({ length: 501 }, () => login(a.orgId, 'too-many')),
    );
    expectError(tooMany, 400, 'VALIDATION_FAILED');
    expect(tooMany.body.error.details).toEqual([expect.objectContaining({ path: 'body.events' })]);
    expectError(await ingest(service.key, []), 400, 'VALIDATION_FAILED');
    expectError(
      await t.api.request('POST', EVENTS, { token: service.key, body: login(a.orgId, 'bare-event') }),
      400,
      'VALIDATION_FAILED',
    );
    expect(await rowsOf('too-many')).toEqual([]);
    expect(await rowsOf('bare-event')).toEqual([]);
  });

  it('accepts exactly 500 events', async () => {
    const reply = await ingest(
      service.key,
      Array.from({ length: 500 }, () => login(a.orgId, 'five-hundred')),
    );
    expect(reply.status).toBe(201);
    expect(reply.body.ids).toHaveLength(500);
    expect(await rowsOf('five-hundred')).toHaveLength(500);
  });

  it('an Idempotency-Key that is empty, longer than 255 characters or not printable ASCII is 400', async () => {
    for (const key of ['', 'k'.repeat(256), 'clé']) {
      const reply = await ingest(service.key, [login(a.orgId, 'bad-key')], { 'idempotency-key': key });
      expectError(reply, 400, 'VALIDATION_FAILED');
      expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    }
    expect(await rowsOf('bad-key')).toEqual([]);
  });
});

describe('what is recorded beside the event', () => {
  it("records when the server received the report in details.reportedAt, whatever the event's own timestamp", async () => {
    const before = Date.now();
    const reply = await ingest(service.key, [
      login(a.orgId, 'reported-at', {
        timestamp: '2019-03-01T08:15:00Z',
        details: { reportedAt: '2000-01-01T00:00:00Z' },
      }),
    ]);
    expect(reply.status).toBe(201);
    const [row] = await rowsOf('reported-at');
    expect(row!.timestamp).toBe('2019-03-01T08:15:00.000000Z');
    const reportedAt = Date.parse(row!.details.reportedAt as string);
    expect(reportedAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(reportedAt).toBeLessThanOrEqual(Date.now());
  });

  it('stores an ipAddress that is no IP (or longer than 45 characters) as null, the original in details.rawIpAddress', async () => {
    const values = ['unknown', '203.0.113.9, 10.0.0.1', `::ffff:${'0'.repeat(50)}`, '2001:db8::1'];
    const reply = await ingest(
      service.key,
      values.map((ipAddress, index) => login(a.orgId, 'raw-ip', { ipAddress, details: { index } })),
    );
    expect(reply.status).toBe(201);
    const { rows } = await t.db.admin.query<{ ip: string | null; raw: string | null }>(
      `SELECT ip_address AS ip, details->>'rawIpAddress' AS raw FROM audit_logs WHERE details->>'scenario' = 'raw-ip' ORDER BY seq`,
    );
    expect(rows).toEqual([
      { ip: null, raw: 'unknown' },
      { ip: null, raw: '203.0.113.9, 10.0.0.1' },
      { ip: null, raw: values[2] },
      { ip: '2001:db8::1', raw: null },
    ]);
  });
});

describe('what may be reported', () => {
  it('accepts the actions other platform components own', async () => {
    const actions = [
      'user.login',
      'user.login.failed',
      'user.logout',
      'user.permission.change',
      'policy.update',
      'policy.evaluate',
      'alert.create',
      'alert.acknowledge',
      'script.execute',
      'automation.policy.evaluate',
    ];
    const reply = await ingest(
      service.key,
      actions.map((action) => login(a.orgId, 'owned-actions', { action })),
    );
    expect(reply.status).toBe(201);
    expect(await rowsOf('owned-actions')).toHaveLength(actions.length);
  });

  it.each([
    'device.delete',
    'device.create',
    'data.export',
    'data.access',
    'organization.update',
    'agent.source.ip.changed',
    'agent.eventlogs.submit',
    'system.cleanup',
    'policy',
    'policy.',
    'custom.thing',
  ])(
    'refuses %s, an action the service emits itself or no reportable one, with 400 naming body.events.<i>.action',
    async (action) => {
      const reply = await ingest(service.key, [login(a.orgId, 'own-action'), login(a.orgId, 'own-action', { action })]);
      expectError(reply, 400, 'VALIDATION_FAILED');
      expect(reply.body.error.details).toEqual([
        expect.objectContaining({
          path: 'body.events.1.action',
          message: expect.stringContaining('actions the service emits itself cannot be reported'),
        }),
      ]);
      expect(await rowsOf('own-action')).toEqual([]);
    },
  );

  it('accepts a timestamp up to 10 minutes ahead of the server (clock skew) and refuses one further ahead with 400', async () => {
    const ahead = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
    expect((await ingest(service.key, [login(a.orgId, 'skewed', { timestamp: ahead(5) })])).status).toBe(201);
    const reply = await ingest(service.key, [login(a.orgId, 'future', { timestamp: ahead(11) })]);
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([
      expect.objectContaining({
        path: 'body.events.0.timestamp',
        message: 'A timestamp may lie at most 10 minutes in the future',
      }),
    ]);
    expect(await rowsOf('future')).toEqual([]);
  });

  it.each([
    ['year 0000', '0000-06-01T00:00:00Z'],
    ['an offset beyond ±15:59', '2020-06-01T00:00:00+20:00'],
    ['an instant before year 0001 in UTC', '0001-01-01T00:00:00+01:00'],
    ['no offset', '2020-06-01T00:00:00'],
    ['no date at all', 'yesterday'],
  ])('refuses a timestamp with %s with 400 naming it, never a 500', async (_case, timestamp) => {
    const reply = await ingest(service.key, [login(a.orgId, 'bad-time', { timestamp })]);
    expectError(reply, 400, 'VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.events.0.timestamp' })]);
  });

  it('accepts details nested 50 levels deep', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 50; i++) deep = { next: deep };
    expect((await ingest(service.key, [login(a.orgId, 'deep', { details: { deep } })])).status).toBe(201);
  });
});

describe('Idempotency-Key', () => {
  const keyHeader = (key: string) => ({ 'idempotency-key': key });

  it('a retry with the same key returns the first reply and writes no second row', async () => {
    const key = randomUUID();
    const events = [login(a.orgId, 'retry'), login(a.orgId, 'retry')];
    const first = await ingest(service.key, events, keyHeader(key));
    const retry = await ingest(service.key, events, keyHeader(key));
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect((await rowsOf('retry')).map((row) => row.id)).toEqual(first.body.ids);
  });

  it('the same key with another body is 422 IDEMPOTENCY_KEY_REUSED and writes nothing', async () => {
    const key = randomUUID();
    expect((await ingest(service.key, [login(a.orgId, 'reused')], keyHeader(key))).status).toBe(201);
    expectError(
      await ingest(service.key, [login(a.orgId, 'reused'), login(a.orgId, 'reused')], keyHeader(key)),
      422,
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect(await rowsOf('reused')).toHaveLength(1);
  });

  it('concurrent requests with the same key write one set of rows: each gets the first reply, or 409 while it runs', async () => {
    const key = randomUUID();
    const events = [login(a.orgId, 'concurrent'), login(b.orgId, 'concurrent')];
    const replies = await Promise.all(Array.from({ length: 6 }, () => ingest(root, events, keyHeader(key))));
    const answered = replies.filter((reply) => reply.status === 201);
    expect(answered.length).toBeGreaterThan(0);
    for (const reply of replies.filter((r) => r.status !== 201)) expectError(reply, 409, 'IDEMPOTENCY_KEY_IN_FLIGHT');
    for (const reply of answered) expect(reply.body).toEqual(answered[0]!.body);
    const later = await ingest(root, events, keyHeader(key));
    expect(later.body).toEqual(answered[0]!.body);
    expect((await rowsOf('concurrent')).map((row) => row.id).sort()).toEqual([...answered[0]!.body.ids].sort());
  });

  it('a key older than 24 hours is accepted as new', async () => {
    const key = randomUUID();
    const events = [login(a.orgId, 'expired-key')];
    const first = await ingest(service.key, events, keyHeader(key));
    await t.db.admin.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
        WHERE idempotency_key = encode(sha256(convert_to(:key::text, 'UTF8')), 'hex')`,
      { key },
    );
    const later = await ingest(service.key, [...events, login(a.orgId, 'expired-key')], keyHeader(key));
    expect(later.status).toBe(201);
    expect(later.body.ids).not.toContain(first.body.ids[0]);
    expect(await rowsOf('expired-key')).toHaveLength(3);
    expect((await ingest(service.key, events, keyHeader(key))).status).toBe(422);
  });

  it('keys belong to the principal: another caller using the same key writes its own rows', async () => {
    const key = randomUUID();
    const events = [login(a.orgId, 'per-principal')];
    const byService = await ingest(service.key, events, keyHeader(key));
    const byRoot = await ingest(root, events, keyHeader(key));
    expect(byRoot.status).toBe(201);
    expect(byRoot.body.ids).not.toEqual(byService.body.ids);
    expect(await rowsOf('per-principal')).toHaveLength(2);
  });

  it('a request that failed stored no reply: the same key can be retried once it is fixed', async () => {
    const key = randomUUID();
    expectError(await ingest(service.key, [login(b.orgId, 'after-failure')], keyHeader(key)), 404, 'NOT_FOUND');
    expect((await ingest(service.key, [login(a.orgId, 'after-failure')], keyHeader(key))).status).toBe(201);
    expect(await rowsOf('after-failure')).toHaveLength(1);
  });
});
