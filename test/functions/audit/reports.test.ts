import { beforeAll, describe, expect, it } from 'vitest';
import { type AuditInput, appendAudit, type Sealed } from '#test/shared/audit/audit-rows.ts';
import { type Reply, useApi } from '#test/support/api.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const REPORTS = '/api/v1/audit-logs/reports';
const t = useApi();
let a: Tenant;
let b: Tenant;
let sealed: Sealed[];

/** One row per action, a minute apart from 10:00 on, in this order. */
const actions: [action: string, extra?: Partial<AuditInput>][] = [
  ['user.login'],
  ['user.login.failed', { result: 'failure' }],
  ['user.logout'],
  ['user.permission.change', { result: 'denied' }],
  ['policy.create'],
  ['policy.update'],
  ['policy.evaluate', { actorType: 'system' }],
  ['automation.policy.evaluate', { actorType: 'system' }],
  ['agent.source.ip.changed', { actorType: 'agent' }],
  ['script.execute', { actorType: 'api_key' }],
  ['device.create'],
  ['device.delete'],
  ['data.access'],
  ['data.export'],
  ['organization.update', { actorType: 'ai_agent' }],
  ['alert.create'],
  ['agent.eventlogs.submit', { actorType: 'agent' }],
];
const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 10, minute)).toISOString();
const get = (path: string, token = a.orgToken) => t.api.request('GET', `${REPORTS}/${path}`, { token });
const actionsOf = (reply: Reply) => (reply.body.data as { action: string }[]).map((row) => row.action);

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  sealed = await appendAudit(
    t.db.admin,
    actions.map(([action, extra], minute) => ({ orgId: a.orgId, timestamp: at(minute), action, ...extra })),
  );
  await appendAudit(t.db.admin, [{ orgId: b.orgId, timestamp: at(30), action: 'user.login' }]);
});

describe('GET /audit-logs/reports/summary', () => {
  it('counts rows by category, result and actor type, every key listed', async () => {
    const reply = await get('summary');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      total: 17,
      byCategory: {
        authentication: 4,
        device: 2,
        automation: 1,
        policy: 4,
        alert: 1,
        compliance: 2,
        organization: 1,
        system: 2,
      },
      byResult: { success: 15, failure: 1, denied: 1 },
      byActorType: { user: 11, api_key: 1, agent: 2, system: 2, ai_agent: 1 },
    });
  });

  it('counts over from/to and the filters only', async () => {
    const reply = await get(`summary?from=${at(10)}&to=${at(13)}&action=data.`);
    expect(reply.body).toMatchObject({ total: 2, byCategory: { compliance: 2, device: 0 }, byActorType: { user: 2 } });
    expect((await get(`summary?orgId=${b.orgId}`)).body.total).toBe(0);
  });
});

describe('GET /audit-logs/reports/security-events', () => {
  it('lists exactly the security events, newest first, in the detailed format', async () => {
    const reply = await get('security-events');
    expect(reply.status).toBe(200);
    expect(actionsOf(reply)).toEqual([
      'agent.source.ip.changed',
      'automation.policy.evaluate',
      'policy.evaluate',
      'policy.update',
      'policy.create',
      'user.permission.change',
      'user.login.failed',
      'user.login',
    ]);
    expect(reply.body.data[0]).toMatchObject({
      id: sealed[8]!.id,
      category: 'system',
      actorType: 'agent',
      user: expect.any(Object),
      resource: expect.any(Object),
    });
    expect(reply.body.pagination).toEqual({
      page: 1,
      limit: 50,
      total: 8,
      totalPages: 1,
      hasMore: false,
      totalExact: true,
    });
  });

  it('pages and filters like the lists', async () => {
    const reply = await get('security-events?limit=3&page=2&user=@&skipCount=true');
    expect(actionsOf(reply)).toEqual(['policy.update', 'policy.create', 'user.permission.change']);
    expect(reply.body.pagination).toMatchObject({ hasMore: true, total: 7 });
    expect(actionsOf(await get('security-events?action=login'))).toEqual(['user.login.failed', 'user.login']);
  });
});

describe('GET /audit-logs/reports/compliance', () => {
  it('lists the compliance-tracked actions with their count per action', async () => {
    const reply = await get('compliance');
    expect(reply.status).toBe(200);
    expect(actionsOf(reply)).toEqual([
      'organization.update',
      'data.export',
      'data.access',
      'device.delete',
      'device.create',
      'script.execute',
      'automation.policy.evaluate',
      'policy.evaluate',
      'policy.update',
    ]);
    expect(reply.body.counts).toEqual({
      'data.access': 1,
      'data.export': 1,
      'device.create': 1,
      'device.delete': 1,
      'policy.update': 1,
      'policy.evaluate': 1,
      'automation.policy.evaluate': 1,
      'script.execute': 1,
      'organization.update': 1,
    });
  });

  it('counts under the filters, every action listed', async () => {
    const reply = await get(`compliance?action=device.&limit=1`);
    expect(actionsOf(reply)).toEqual(['device.delete']);
    expect(reply.body.pagination).toEqual({
      page: 1,
      limit: 1,
      total: 2,
      totalPages: 2,
      hasMore: true,
      totalExact: true,
    });
    expect(reply.body.counts).toMatchObject({ 'device.create': 1, 'device.delete': 1, 'data.access': 0 });
  });
});

describe('reports', () => {
  it('need audit:read (403) and refuse bad filters (400)', async () => {
    const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    for (const path of ['summary', 'security-events', 'compliance']) {
      expect((await get(path, token)).status, path).toBe(403);
      expect((await get(`${path}?from=soon`)).status, path).toBe(400);
    }
  });

  it("show a partner its organizations' rows only", async () => {
    expect((await get('summary', a.partnerToken)).body.total).toBe(17);
    expect((await get('summary', b.partnerToken)).body).toMatchObject({ total: 1, byCategory: { authentication: 1 } });
  });
});
