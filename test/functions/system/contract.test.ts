/**
 * The API contract where the OpenAPI document and the behaviour once disagreed, over real
 * HTTP against the local gateway: unmatched routes, body limits, text encoding, query strings, time zones, agents'
 * unknown fields and malformed path parameters.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '#shared/db/migrate.ts';
import { type Agent, agentCall, logEntry } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let agent: Agent;
beforeAll(async () => {
  tenant = await createTenant(t.api);
  agent = await enrollDevice(t.api, tenant);
});

const get = (path: string) => t.api.request('GET', path, { token: tenant.orgToken });
const organizations = () =>
  t.db.admin.query<{ name: string }>('SELECT name FROM organizations ORDER BY created_at').then((r) => r.rows);
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('requests no route takes', () => {
  it('answers an unknown path 404 NOT_FOUND in the error envelope', async () => {
    const reply = await t.api.request('GET', '/api/v1/nothing-here');
    expect(reply).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND', message: expect.any(String) } } });
  });

  it('answers a known path under another method 405 METHOD_NOT_ALLOWED with Allow, in the error envelope', async () => {
    const reply = await t.api.request('PUT', `/api/v1/devices/${agent.deviceId}`, { token: tenant.orgToken });
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('GET, PATCH, DELETE');
    expect(reply.body).toEqual({
      error: { code: 'METHOD_NOT_ALLOWED', message: expect.stringContaining('allowed: GET, PATCH, DELETE') },
    });
  });

  it('answers HEAD on a GET route 405 with Allow: GET, without a body', async () => {
    const response = await fetch(`${t.api.url}/api/v1/health`, { method: 'HEAD' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
    expect(await response.text()).toBe('');
  });
});

describe('request bodies', () => {
  it("refuses a body over a route's limit with 413 PAYLOAD_TOO_LARGE in the envelope, stored nowhere", async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Big', pad: 'x'.repeat(1024 * 1024) },
    });
    expect(reply).toMatchObject({ status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE' } } });
    expect((await organizations()).map((o) => o.name)).not.toContain('Big');
  });

  it("refuses a body over the gateway's 10 MiB in the same envelope", async () => {
    const reply = await t.api.request('PUT', `/api/v1/agents/${agent.agentId}/eventlogs`, {
      token: agent.token,
      rawBody: 'x'.repeat(11 * 1024 * 1024),
    });
    expect(reply).toMatchObject({ status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE' } } });
  });

  it('refuses a body that is not UTF-8 with 400 naming the byte, and stores nothing', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name":"Caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const response = await fetch(`${t.api.url}/api/v1/orgs/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.partnerToken}`, 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: 'VALIDATION_FAILED', details: [{ path: 'body', message: 'Invalid UTF-8 at byte 12' }] },
    });
    expect((await organizations()).map((o) => o.name)).not.toContainEqual(expect.stringMatching(/^Caf/));
  });

  it('reads a UTF-8 body whatever its content type says', async () => {
    const response = await fetch(`${t.api.url}/api/v1/orgs/organizations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.partnerToken}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('{"name":"Café"}'),
    });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { name: string }).name).toBe('Café');
  });

  it('refuses a change that names no field (minProperties 1)', async () => {
    const reply = await t.api.request('PATCH', `/api/v1/devices/${agent.deviceId}`, {
      token: tenant.orgToken,
      body: {},
    });
    expect(reply.status).toBe(400);
  });
});

describe("agents' unknown body fields", () => {
  it('are dropped unread at enrollment, whatever they hold', async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
    });
    const reply = await t.api.request('POST', '/api/v1/agents/enroll', {
      rawBody: `{"enrollmentKey":"${key.body.key}","hostname":"pc-2","future":"a\\u0000b","deep":${nested(100)}}`,
    });
    expect(reply.status).toBe(201);
  });

  it('are dropped unread in a heartbeat and in a log entry', async () => {
    const beat = await agentCall(t.api, agent, 'POST', '/heartbeat', {
      status: 'online',
      future: 'a\u0000b',
      deep: JSON.parse(nested(100)),
    });
    expect(beat.status).toBe(200);
    const logs = await agentCall(t.api, agent, 'POST', '/logs', {
      logs: [{ ...logEntry(), extra: 'a\u0000b' }],
    });
    expect(logs).toMatchObject({ status: 201, body: { received: 1 } });
  });

  it('still refuses a NUL in a field the server reads', async () => {
    const beat = await agentCall(t.api, agent, 'POST', '/heartbeat', { agentVersion: 'a\u0000b' });
    expect(beat.status).toBe(400);
    expect(beat.body.error.details[0].path).toBe('body.agentVersion');
  });
});

describe('query strings', () => {
  it('refuses an unknown query parameter with 400 naming it', async () => {
    const reply = await get('/api/v1/devices?serach=pc');
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([
      { path: 'query.serach', message: 'Unknown query parameter serach', code: 'unrecognized_keys' },
    ]);
    expect((await get(`/api/v1/devices/${agent.deviceId}?x=1`)).status).toBe(400);
  });

  it('refuses a repeated scalar parameter by name, and reads a repeated list parameter as one list', async () => {
    const repeated = await get('/api/v1/devices?page=1&page=2');
    expect(repeated.status).toBe(400);
    expect(repeated.body.error.details).toEqual([
      { path: 'query.page', message: 'Give page once; it was given 2 times', code: 'repeated' },
    ]);
    const list = await get(`/api/v1/devices/${agent.deviceId}/diagnostic-logs?level=info&level=warn`);
    expect(list.status).toBe(200);
  });

  it.each(['0x10', '1e3', '%201', 'Infinity', '-1', '1.0', ''])(
    'refuses page=%s: decimal digits only',
    async (page) => {
      const reply = await get(`/api/v1/devices?page=${page}`);
      expect(reply.status).toBe(400);
      expect(reply.body.error.details[0].path).toBe('query.page');
    },
  );

  it('treats an empty time bound as none, in the audit trail (to) as in the logs (until)', async () => {
    const audit = await t.api.request('GET', '/api/v1/audit-logs/logs?to=&from=', { token: tenant.partnerToken });
    expect(audit.status).toBe(200);
    expect(audit.body.pagination.total).toBeGreaterThan(0);
    expect((await get(`/api/v1/devices/${agent.deviceId}/diagnostic-logs?until=`)).status).toBe(200);
  });

  it('refuses an unknown value in a list filter, naming the list', async () => {
    const reply = await get(`/api/v1/devices/${agent.deviceId}/eventlogs?level=info,loud`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toMatch(/^query\.level/);
  });
});

describe('instants', () => {
  it.each([
    ['year 0000', '0000-06-01T00:00:00Z'],
    ['an offset beyond +14:00', '2026-01-01T00:00:00+14:30'],
    ['an offset beyond -14:00', '2026-01-01T00:00:00-15:00'],
    ['a day February lacks', '2026-02-29T00:00:00Z'],
  ])('refuses %s with 400, in a body as in a query', async (_, instant) => {
    const logs = await agentCall(t.api, agent, 'POST', '/logs', { logs: [logEntry(0, { timestamp: instant })] });
    expect(logs.status).toBe(400);
    expect(logs.body.error.details[0].path).toBe('body.logs.0.timestamp');
    const list = await get(`/api/v1/devices/${agent.deviceId}/diagnostic-logs?since=${encodeURIComponent(instant)}`);
    expect(list.status).toBe(400);
    const audit = await t.api.request('GET', `/api/v1/audit-logs/logs?from=${encodeURIComponent(instant)}`, {
      token: tenant.partnerToken,
    });
    expect(audit.status).toBe(400);
  });

  it('accepts offsets up to ±14:00 and dates alone as audit bounds', async () => {
    const logs = await agentCall(t.api, agent, 'POST', '/logs', {
      logs: [
        logEntry(0, { timestamp: '2026-01-01T00:00:00+14:00' }),
        logEntry(0, { timestamp: '2026-01-01T00:00:00-14:00' }),
      ],
    });
    expect(logs.status).toBe(201);
    const audit = await t.api.request('GET', '/api/v1/audit-logs/logs?from=2026-01-01&to=2999-01-01T00:00:00%2B0100', {
      token: tenant.partnerToken,
    });
    expect(audit.status).toBe(200);
  });
});

describe('live-query path parameters', () => {
  const base = () => `/api/v1/devices/${agent.deviceId}/eventlogs`;

  it('refuses a malformed percent-encoded name with 400 before the agent is asked', async () => {
    const reply = await get(`${base()}/%E0%A4%A`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([
      { path: 'params.name', message: 'Malformed percent-encoding', code: 'invalid_format' },
    ]);
    // A well-formed name reaches the relay, which finds the device offline.
    expect((await get(`${base()}/Security`)).status).toBe(409);
  });

  it.each(['0', '9007199254740992', '1e3', '0x10'])('refuses record id %s with 400', async (recordId) => {
    const reply = await get(`${base()}/Security/events/${recordId}`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('params.recordId');
  });

  it('takes record ids up to 2^53 - 1, leading zeros read as the number', async () => {
    expect((await get(`${base()}/Security/events/9007199254740991`)).status).toBe(409);
    expect((await get(`${base()}/Security/events/007`)).status).toBe(409);
  });
});

describe('site time zones', () => {
  it('are stored in their canonical IANA spelling', async () => {
    const site = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
      token: tenant.orgToken,
      body: { name: 'Berlin', timezone: 'europe/berlin' },
    });
    expect(site).toMatchObject({ status: 201, body: { timezone: 'Europe/Berlin' } });
    const changed = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}/sites/${site.body.id}`, {
      token: tenant.orgToken,
      body: { timezone: 'AMERICA/NEW_YORK' },
    });
    expect(changed.body.timezone).toBe('America/New_York');
    const { rows } = await t.db.admin.query('SELECT timezone FROM sites WHERE id = :id::uuid', { id: site.body.id });
    expect(rows).toEqual([{ timezone: 'America/New_York' }]);
  });

  it('are respelled where stored before (migration 0031), unknown spellings left alone', async () => {
    const sites = await Promise.all(
      ['Old Paris', 'Old other'].map((name) =>
        t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/sites`, {
          token: tenant.orgToken,
          body: { name },
        }),
      ),
    );
    const [paris, other] = sites.map((site) => site.body.id as string);
    await t.db.admin.query(`UPDATE sites SET timezone = 'europe/paris' WHERE id = :id::uuid`, { id: paris });
    await t.db.admin.query(`UPDATE sites SET timezone = 'nowhere/else' WHERE id = :id::uuid`, { id: other });
    const respell = loadMigrations().find((m) => m.name.startsWith('0031_'))!;
    for (const statement of respell.statements) await t.db.admin.query(statement);
    const { rows } = await t.db.admin.query(
      'SELECT timezone FROM sites WHERE id IN (:paris::uuid, :other::uuid) ORDER BY name',
      { paris, other },
    );
    expect(rows).toEqual([{ timezone: 'Europe/Paris' }, { timezone: 'nowhere/else' }]);
  });
});
