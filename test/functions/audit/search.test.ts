import { beforeAll, describe, expect, it } from 'vitest';
import { appendAudit, type Sealed } from '#test/shared/audit/audit-rows.ts';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const SEARCH = '/api/v1/audit-logs/search';
const t = useApi();
let a: Tenant;
let b: Tenant;
let byAction: Sealed, byEmail: Sealed, byType: Sealed, byName: Sealed, byDetails: Sealed, percent: Sealed;

const plain = {
  actorEmail: 'someone@alpha.test',
  action: 'device.update',
  resourceType: 'device',
  resourceName: 'PC-1',
  details: {},
};
const search = (query: string, token = a.orgToken) => t.api.request('GET', `${SEARCH}?${query}`, { token });
const ids = (reply: Reply) => (reply.body.data as { id: string }[]).map((row) => row.id);

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  [byAction, byEmail, byType, byName, byDetails, percent] = (await appendAudit(t.db.admin, [
    { orgId: a.orgId, timestamp: '2026-03-01T10:01:00Z', ...plain, action: 'zebra.create' },
    { orgId: a.orgId, timestamp: '2026-03-01T10:02:00Z', ...plain, actorEmail: 'zebra@alpha.test' },
    { orgId: a.orgId, timestamp: '2026-03-01T10:03:00Z', ...plain, resourceType: 'zebra' },
    { orgId: a.orgId, timestamp: '2026-03-01T10:04:00Z', ...plain, resourceName: 'ZEBRA-01' },
    { orgId: a.orgId, timestamp: '2026-03-01T10:05:00Z', ...plain, details: { note: 'Found a Zebra crossing' } },
    { orgId: a.orgId, timestamp: '2026-03-01T10:06:00Z', ...plain, details: { discount: '50% off' } },
  ])) as [Sealed, Sealed, Sealed, Sealed, Sealed, Sealed];
  await appendAudit(t.db.admin, [
    { orgId: a.orgId, timestamp: '2026-03-01T10:07:00Z', ...plain, details: { discount: '500 off' } },
    { orgId: b.orgId, timestamp: '2026-03-01T10:08:00Z', ...plain, action: 'zebra.create' },
  ]);
});

describe('GET /audit-logs/search', () => {
  it('matches action, actor e-mail, resource type, resource name and details, case-insensitively, newest first', async () => {
    const reply = await search('q=zEbRa');
    expect(reply.status).toBe(200);
    expect(ids(reply)).toEqual([byDetails, byName, byType, byEmail, byAction].map((row) => row.id));
    expect(reply.body.pagination).toEqual({
      page: 1,
      limit: 50,
      total: 5,
      totalPages: 1,
      hasMore: false,
      totalExact: true,
    });
    expect(reply.body.data[0]).toMatchObject({
      id: byDetails.id,
      action: 'device.update',
      category: 'device',
      details: { note: 'Found a Zebra crossing' },
    });
  });

  it('needs q of at least one character (400 naming query.q)', async () => {
    for (const query of ['', 'q=', 'action=device']) {
      const reply = await search(query);
      expect(reply.status, query).toBe(400);
      expect(reply.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        details: [expect.objectContaining({ path: 'query.q' })],
      });
    }
  });

  it('says in words that q is missing', async () => {
    const reply = await search('action=device');
    expect(reply.body.error.message).toBe('Invalid query: Missing query parameter q');
    expect(reply.body.error.details).toEqual([
      { path: 'query.q', message: 'Missing query parameter q', code: 'invalid_type' },
    ]);
  });

  it('combines q with the filters by AND', async () => {
    expect(ids(await search('q=zebra&user=zebra@'))).toEqual([byEmail.id]);
    expect(ids(await search('q=zebra&to=2026-03-01T10:03:00Z&from=2026-03-01T10:02:00Z'))).toEqual([
      byType.id,
      byEmail.id,
    ]);
    expect(ids(await search('q=zebra&resource=zebra-'))).toEqual([byName.id]);
  });

  it('matches LIKE wildcards in q literally', async () => {
    expect(ids(await search(`q=${encodeURIComponent('50%')}`))).toEqual([percent.id]);
  });

  it('pages like the lists, also without counting', async () => {
    const reply = await search('q=zebra&limit=2&page=2&skipCount=true');
    expect(ids(reply)).toEqual([byType.id, byEmail.id]);
    expect(reply.body.pagination).toEqual({
      page: 2,
      limit: 2,
      total: 5,
      totalPages: 3,
      hasMore: true,
      totalExact: false,
    });
  });

  it("never finds another tenant's rows", async () => {
    expect(ids(await search('q=zebra.create', a.partnerToken))).toEqual([byAction.id]);
    expect(ids(await search(`q=zebra&orgId=${a.orgId}`, b.partnerToken))).toEqual([]);
  });
});

describe('the filters read through one search document per entry', () => {
  let c: Tenant;
  let quoted: Sealed, noted: Sealed;
  const searchC = (query: string) => search(query, c.orgToken);

  beforeAll(async () => {
    c = await createTenant(t.api, 'Gamma');
    [quoted, noted] = (await appendAudit(t.db.admin, [
      {
        orgId: c.orgId,
        timestamp: '2026-03-02T10:01:00Z',
        ...plain,
        action: 'zebra.create',
        details: { actor: { name: 'Dan "the Zebra" Back\\slash' } },
      },
      { orgId: c.orgId, timestamp: '2026-03-02T10:02:00Z', ...plain, details: { note: 'tech@zebra.test wrote' } },
    ])) as [Sealed, Sealed];
  });

  it('match each part alone: a text across two parts (action, then e-mail) finds nothing', async () => {
    expect(ids(await searchC(`q=${encodeURIComponent('zebra.create\nsomeone')}`))).toEqual([]);
    expect(ids(await searchC(`q=${encodeURIComponent('create someone')}`))).toEqual([]);
    expect(ids(await searchC('q=zebra.create'))).toEqual([quoted.id]);
  });

  it('match the user filter against the e-mail and the name only, quotes and backslashes as written', async () => {
    // The details mention the text, the e-mail and the name do not.
    expect(ids(await searchC('q=zebra&user=zebra.test'))).toEqual([]);
    expect(ids(await searchC(`q=zebra&user=${encodeURIComponent('"the zebra"')}`))).toEqual([quoted.id]);
    expect(ids(await searchC(`q=zebra&user=${encodeURIComponent('back\\slash')}`))).toEqual([quoted.id]);
    expect(ids(await searchC('q=zebra&user=the zebra'))).toEqual([quoted.id]);
    expect(ids(await searchC('q=wrote&user=someone@'))).toEqual([noted.id]);
  });

  it('match the action and resource filters against their own columns only', async () => {
    expect(ids(await searchC('q=zebra&action=zebra'))).toEqual([quoted.id]);
    expect(ids(await searchC('q=zebra&resource=zebra'))).toEqual([]);
    expect(ids(await searchC('q=zebra&resource=pc-1'))).toEqual([noted.id, quoted.id]);
  });
});
