import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { appendAudit, appendOne, type Sealed } from '#test/shared/audit/audit-rows.ts';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const t = useApi();
let a: Tenant;
let b: Tenant;
/** A second organization of a's partner, and one the partner deleted. */
let a2: string;
let gone: string;
const rows: Record<string, Sealed | undefined> = {};
const adaId = randomUUID();

/** 2026-03-01 10:mm as an ISO instant, and as the list formats render it (UTC, microseconds). */
const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 10, minute)).toISOString();
const shown = (minute: number) => at(minute).replace('.000Z', '.000000Z');

const list = (path: string, token: string) => t.api.request('GET', path, { token });
const idsOf = (reply: Reply, key: 'data' | 'entries' = 'data') =>
  (reply.body[key] as { id: string }[]).map((row) => row.id);

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  a2 = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Two' } })).body.id;
  gone = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Gone' } })).body.id;

  const ada = { actorId: adaId, actorEmail: 'ada@alpha.test' };
  [rows.create, rows.update, rows.login, rows.uptime, rows.uptimeLike, rows.twinA, rows.twinB] = await appendAudit(
    t.db.admin,
    [
      {
        orgId: a.orgId,
        timestamp: at(1),
        ...ada,
        action: 'device.create',
        resourceType: 'device',
        resourceName: 'WS-7781',
        details: {
          actor: { name: 'Ada Lovelace', role: 'org_admin', department: 'Operations' },
          sessionId: 'sess-1',
          before: {},
          after: { hostname: 'WS-7781' },
        },
      },
      {
        orgId: a.orgId,
        timestamp: at(2),
        actorEmail: 'bob@alpha.test',
        action: 'device.update',
        resourceType: 'device',
        resourceName: 'WS-7781',
        details: {
          actor: { name: 'Bob Builder', role: 'org_technician' },
          changes: { before: { displayName: 'old' }, after: { displayName: 'new' } },
        },
      },
      {
        orgId: a.orgId,
        timestamp: at(3),
        ...ada,
        action: 'user.login.failed',
        resourceType: null,
        resourceId: null,
        resourceName: null,
        ipAddress: null,
        userAgent: null,
        result: 'failure',
        errorMessage: 'bad password',
      },
      {
        orgId: a.orgId,
        timestamp: at(4),
        action: 'organization.update',
        resourceType: 'organization',
        resourceName: '100% Uptime Ltd',
      },
      {
        orgId: a.orgId,
        timestamp: at(5),
        action: 'organization.update',
        resourceType: 'organization',
        resourceName: '1000 Uptime Ltd',
      },
      // Two rows of one instant: the later in the chain is listed first.
      { orgId: a.orgId, timestamp: at(6), action: 'automation.policy.evaluate', resourceType: 'policy' },
      { orgId: a.orgId, timestamp: at(6), action: 'automation.run', resourceType: 'automation' },
    ],
  );
  rows.second = await appendOne(t.db.admin, {
    orgId: a2,
    timestamp: at(7),
    action: 'script.execute',
    resourceType: 'script',
    resourceName: 'cleanup.ps1',
  });
  rows.gone = await appendOne(t.db.admin, {
    orgId: gone,
    timestamp: at(8),
    action: 'alert.create',
    resourceType: 'alert',
  });
  rows.beta = await appendOne(t.db.admin, {
    orgId: b.orgId,
    timestamp: at(9),
    actorEmail: 'ada@beta.test',
    action: 'device.create',
    resourceType: 'device',
    resourceName: 'WS-7781',
  });
  expect((await t.api.request('DELETE', `${ORGS}/${gone}`, { token: a.partnerToken })).status).toBe(204);
});

/** The organization's own rows, newest first. */
const alphaNewestFirst = () =>
  [rows.twinB, rows.twinA, rows.uptimeLike, rows.uptime, rows.login, rows.update, rows.create].map((row) => row!.id);

describe('GET /audit-logs', () => {
  it('answers entries in the flattened viewer format', async () => {
    const reply = await list('/api/v1/audit-logs', a.orgToken);
    expect(reply.status).toBe(200);
    const entry = reply.body.entries.find((e: { id: string }) => e.id === rows.create!.id);
    expect(entry).toEqual({
      id: rows.create!.id,
      timestamp: shown(1),
      action: 'device.create',
      resource: 'WS-7781',
      resourceType: 'device',
      details: expect.any(String),
      ipAddress: '203.0.113.7',
      userAgent: 'Mozilla/5.0',
      sessionId: 'sess-1',
      user: { name: 'Ada Lovelace', email: 'ada@alpha.test', role: 'org_admin', department: 'Operations' },
      changes: { before: {}, after: { hostname: 'WS-7781' } },
      orgId: a.orgId,
      seq: rows.create!.seq,
      actorType: 'user',
      actorHostname: null,
      category: 'device',
      result: 'success',
    });
    expect(JSON.parse(entry.details)).toEqual({
      actor: { name: 'Ada Lovelace', role: 'org_admin', department: 'Operations' },
      sessionId: 'sess-1',
      before: {},
      after: { hostname: 'WS-7781' },
    });
  });

  it("fills what a row does not record with '' (strings), null (sessionId) and {} (changes), and reads changes.before/after", async () => {
    const { body } = await list('/api/v1/audit-logs', a.orgToken);
    const byId = (id: string) => body.entries.find((e: { id: string }) => e.id === id);
    expect(byId(rows.login!.id)).toMatchObject({
      resource: '',
      resourceType: '',
      ipAddress: '',
      userAgent: '',
      sessionId: null,
      user: { name: '', email: 'ada@alpha.test', role: '', department: '' },
      changes: { before: {}, after: {} },
      result: 'failure',
    });
    expect(byId(rows.update!.id).changes).toEqual({ before: { displayName: 'old' }, after: { displayName: 'new' } });
  });

  it('is newest first, rows of one instant by their chain position', async () => {
    const reply = await list('/api/v1/audit-logs', a.orgToken);
    expect(idsOf(reply, 'entries')).toEqual(alphaNewestFirst());
    expect(reply.body.pagination).toEqual({
      page: 1,
      limit: 50,
      total: 7,
      totalPages: 1,
      hasMore: false,
      totalExact: true,
    });
  });
});

describe('GET /audit-logs/logs', () => {
  it('answers entries in the detailed format with the category of its action', async () => {
    const reply = await list('/api/v1/audit-logs/logs', a.orgToken);
    expect(reply.status).toBe(200);
    expect(reply.body.data.find((e: { id: string }) => e.id === rows.login!.id)).toEqual({
      id: rows.login!.id,
      timestamp: shown(3),
      user: { id: adaId, name: '', email: 'ada@alpha.test', role: '' },
      action: 'user.login.failed',
      resource: { type: '', id: null, name: '' },
      category: 'authentication',
      result: 'failure',
      ipAddress: null,
      userAgent: null,
      details: {},
      errorMessage: 'bad password',
      orgId: a.orgId,
      seq: rows.login!.seq,
      actorType: 'user',
      actorHostname: null,
    });
  });

  it('derives the category from the action prefix, everything unknown being system', async () => {
    const { body } = await list('/api/v1/audit-logs/logs', a.orgToken);
    const categories = Object.fromEntries(
      body.data.map((e: { action: string; category: string }) => [e.action, e.category]),
    );
    expect(categories).toEqual({
      'device.create': 'device',
      'device.update': 'device',
      'user.login.failed': 'authentication',
      'organization.update': 'organization',
      'automation.policy.evaluate': 'policy',
      'automation.run': 'system',
    });
  });

  it("shows an agent actor with its device's hostname", async () => {
    const agentOrg = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Agents' } })).body
      .id;
    const { agentId } = await enrollDevice(t.api, { ...a, orgId: agentOrg, orgToken: a.partnerToken }, 'web-01');
    const row = await appendOne(t.db.admin, {
      orgId: agentOrg,
      actorType: 'agent',
      actorId: agentId,
      actorEmail: null,
      action: 'agent.eventlogs.submit',
    });
    const reply = await list(`/api/v1/audit-logs/logs?orgId=${agentOrg}`, a.partnerToken);
    expect(reply.body.data.find((e: { id: string }) => e.id === row.id)).toMatchObject({
      actorType: 'agent',
      actorHostname: 'web-01',
      user: { id: agentId, email: '' },
    });
  });

  it("never shows the hostname of another tenant's agent that a row names (an ingested event may name any agent id)", async () => {
    const { agentId } = await enrollDevice(t.api, b, 'beta-secret-host');
    const reporting = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Reports' } }))
      .body.id;
    const row = await appendOne(t.db.admin, {
      orgId: reporting,
      actorType: 'agent',
      actorId: agentId,
      actorEmail: null,
      action: 'script.execute',
    });
    const detailed = await list(`/api/v1/audit-logs/logs?orgId=${reporting}`, a.partnerToken);
    expect(detailed.body.data.find((e: { id: string }) => e.id === row.id)).toMatchObject({
      actorType: 'agent',
      actorHostname: null,
      user: { id: agentId },
    });
    const viewer = await list(`/api/v1/audit-logs?orgId=${reporting}`, a.partnerToken);
    expect(viewer.body.entries.find((e: { id: string }) => e.id === row.id)).toMatchObject({ actorHostname: null });
    expect(JSON.stringify([detailed.body, viewer.body])).not.toContain('beta-secret-host');
  });
});

describe('pagination', () => {
  it('defaults to page 1 of 50, pages with limit and page, and clamps a limit above 100', async () => {
    const second = await list('/api/v1/audit-logs/logs?limit=2&page=2', a.orgToken);
    expect(idsOf(second)).toEqual(alphaNewestFirst().slice(2, 4));
    expect(second.body.pagination).toEqual({
      page: 2,
      limit: 2,
      total: 7,
      totalPages: 4,
      hasMore: true,
      totalExact: true,
    });
    expect((await list('/api/v1/audit-logs/logs?limit=5000', a.orgToken)).body.pagination.limit).toBe(100);
    expect((await list('/api/v1/audit-logs/logs?page=9', a.orgToken)).body).toEqual({
      data: [],
      pagination: { page: 9, limit: 50, total: 7, totalPages: 1, hasMore: false, totalExact: true },
    });
  });

  it('refuses a page or limit below 1 with 400 naming the parameter', async () => {
    for (const [query, path] of [
      ['limit=0', 'query.limit'],
      ['page=0', 'query.page'],
      ['limit=ten', 'query.limit'],
    ]) {
      const reply = await list(`/api/v1/audit-logs?${query}`, a.orgToken);
      expect(reply.status, query).toBe(400);
      expect(reply.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [expect.objectContaining({ path })],
      });
    }
  });

  it('with skipCount reports what is known: the rows up to this page, one more when more exist, and hasMore', async () => {
    const first = await list('/api/v1/audit-logs?limit=3&skipCount=true', a.orgToken);
    expect(idsOf(first, 'entries')).toEqual(alphaNewestFirst().slice(0, 3));
    expect(first.body.pagination).toEqual({
      page: 1,
      limit: 3,
      total: 4,
      totalPages: 2,
      hasMore: true,
      totalExact: false,
    });
    const last = await list('/api/v1/audit-logs/logs?limit=3&page=3&skipCount=1', a.orgToken);
    expect(idsOf(last)).toEqual(alphaNewestFirst().slice(6));
    expect(last.body.pagination).toEqual({
      page: 3,
      limit: 3,
      total: 7,
      totalPages: 3,
      hasMore: false,
      totalExact: true,
    });
    expect((await list('/api/v1/audit-logs?skipCount=false', a.orgToken)).body.pagination).toEqual({
      page: 1,
      limit: 50,
      total: 7,
      totalPages: 1,
      hasMore: false,
      totalExact: true,
    });
    expect((await list('/api/v1/audit-logs?skipCount=maybe', a.orgToken)).status).toBe(400);
  });

  it('with skipCount, a page past the end proves no row: total 0 (a lower bound), hasMore false, never a made-up total', async () => {
    const beyond = await list('/api/v1/audit-logs/logs?skipCount=true&page=100', a.orgToken);
    expect(beyond.body).toEqual({
      data: [],
      pagination: { page: 100, limit: 50, total: 0, totalPages: 0, hasMore: false, totalExact: false },
    });
    const justAfter = await list('/api/v1/audit-logs?skipCount=true&limit=7&page=2', a.orgToken);
    expect(justAfter.body).toEqual({
      entries: [],
      pagination: { page: 2, limit: 7, total: 0, totalPages: 0, hasMore: false, totalExact: false },
    });
  });
});

describe('filters', () => {
  const filtered = async (query: string) => idsOf(await list(`/api/v1/audit-logs/logs?${query}`, a.orgToken));

  it('user matches the actor e-mail or the actor name, case-insensitively', async () => {
    expect(await filtered('user=ADA@')).toEqual([rows.login!.id, rows.create!.id]);
    expect(await filtered('user=builder')).toEqual([rows.update!.id]);
  });

  it('action and resource match substrings; resource the type or the name', async () => {
    expect(await filtered('action=device.')).toEqual([rows.update!.id, rows.create!.id]);
    expect(await filtered('resource=ws-7781')).toEqual([rows.update!.id, rows.create!.id]);
    expect(await filtered('resource=POLICY')).toEqual([rows.twinA!.id]);
  });

  it('match LIKE wildcards literally', async () => {
    expect(await filtered(`resource=${encodeURIComponent('100%')}`)).toEqual([rows.uptime!.id]);
    expect(await filtered('action=device_create')).toEqual([]);
  });

  it('from and to bound the time range inclusively and combine with the others by AND', async () => {
    expect(await filtered(`from=${at(2)}&to=${encodeURIComponent('2026-03-01T11:04:00+01:00')}`)).toEqual([
      rows.uptime!.id,
      rows.login!.id,
      rows.update!.id,
    ]);
    expect(await filtered(`from=${at(2)}&user=ada`)).toEqual([rows.login!.id]);
  });

  it('an empty filter is no filter', async () => {
    expect(await filtered('user=&action=')).toEqual(alphaNewestFirst());
  });

  it('read a date alone as the whole UTC day (from its start, to its end), an instant without offset as UTC, and +hhmm offsets', async () => {
    const all = alphaNewestFirst();
    expect(await filtered('from=2026-03-01&to=2026-03-01')).toEqual(all);
    expect(await filtered('to=2026-02-28')).toEqual([]);
    expect(await filtered('from=2026-03-02')).toEqual([]);
    expect(await filtered('from=2026-03-01T10:02:00&to=2026-03-01T10:04:00')).toEqual([
      rows.uptime!.id,
      rows.login!.id,
      rows.update!.id,
    ]);
    expect(
      await filtered(
        `from=${encodeURIComponent('2026-03-01T11:02:00+0100')}&to=${encodeURIComponent('2026-03-01T05:34:00-0430')}`,
      ),
    ).toEqual([rows.uptime!.id, rows.login!.id, rows.update!.id]);
  });

  it('refuse a from or to that is no ISO 8601 date or instant (400)', async () => {
    for (const query of [
      'from=yesterday',
      'to=2026-03-01T10:00',
      'from=2026-02-30T00:00:00Z',
      'from=2026-02-30',
      'from=2026-13-01',
      'to=2026-03-01T25:00:00',
      'from=0000-01-01T00:00:00Z',
      'to=2026-03-01T10:00:00%2B23:00',
      'to=2026-03-01T10:00:00%2B2300',
      'from=20260301',
    ]) {
      const reply = await list(`/api/v1/audit-logs/logs?${query}`, a.orgToken);
      expect(reply.status, query).toBe(400);
      expect(reply.body.error.details[0].path).toMatch(/^query\.(from|to)$/);
    }
  });
});

describe('tenancy', () => {
  it("an organization user sees only its organization's rows, also when naming another organization", async () => {
    expect(idsOf(await list('/api/v1/audit-logs/logs', a.orgToken))).toEqual(alphaNewestFirst());
    expect(await list(`/api/v1/audit-logs/logs?orgId=${a2}`, a.orgToken)).toMatchObject({
      status: 200,
      body: { data: [], pagination: { total: 0 } },
    });
  });

  it("a partner user sees all its organizations' rows, those of a deleted organization included, and may narrow to one", async () => {
    const all = idsOf(await list('/api/v1/audit-logs/logs?limit=100', a.partnerToken));
    expect(all).toEqual(expect.arrayContaining([rows.gone!.id, rows.second!.id, ...alphaNewestFirst()]));
    expect(all).not.toContain(rows.beta!.id);
    expect(idsOf(await list(`/api/v1/audit-logs/logs?orgId=${a2}`, a.partnerToken))).toEqual([rows.second!.id]);
    expect(idsOf(await list(`/api/v1/audit-logs/logs?orgId=${gone}&action=alert.`, a.partnerToken))).toEqual([
      rows.gone!.id,
    ]);
  });

  it("another tenant's orgId gives an empty result, never its data", async () => {
    const reply = await list(`/api/v1/audit-logs?orgId=${b.orgId}`, a.partnerToken);
    expect(reply.body).toEqual({
      entries: [],
      pagination: { page: 1, limit: 50, total: 0, totalPages: 0, hasMore: false, totalExact: true },
    });
    expect(idsOf(await list('/api/v1/audit-logs/logs?resource=WS-7781', b.orgToken))).toEqual([rows.beta!.id]);
  });

  it('a platform administrator sees every tenant', async () => {
    const all = idsOf(await list('/api/v1/audit-logs/logs?resource=WS-7781', await platformAdmin()));
    expect(all).toEqual([rows.beta!.id, rows.update!.id, rows.create!.id]);
  });

  it('merges organizations newest first', async () => {
    const reply = await list(`/api/v1/audit-logs/logs?from=${at(5)}&to=${at(8)}`, a.partnerToken);
    expect(idsOf(reply)).toEqual([rows.gone!.id, rows.second!.id, rows.twinB!.id, rows.twinA!.id, rows.uptimeLike!.id]);
  });
});

describe('access', () => {
  it('needs audit:read (403)', async () => {
    const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    for (const path of ['/api/v1/audit-logs', '/api/v1/audit-logs/logs']) {
      const reply = await list(path, token);
      expect(reply.status, path).toBe(403);
      expect(reply.body.error.code).toBe('FORBIDDEN');
    }
    expect((await list('/api/v1/audit-logs', await orgUser(a.partnerId, a.orgId, 'org_viewer'))).status).toBe(200);
    expect((await list('/api/v1/audit-logs', await partnerUser(a.partnerId, 'partner_technician'))).status).toBe(200);
  });

  it('needs a user token', async () => {
    expect((await t.api.request('GET', '/api/v1/audit-logs')).status).toBe(401);
    const key = await t.api.request('POST', `${ORGS}/${a.orgId}/api-keys`, {
      token: a.orgToken,
      body: { name: 'viewer', role: 'org_viewer' },
    });
    expect((await list('/api/v1/audit-logs', key.body.key)).status).toBe(401);
  });
});
