import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Agent, submitLogs } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let agent: Agent;

const base = Date.parse('2026-03-01T00:00:00Z');
const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
const levels = ['debug', 'info', 'warn', 'error'] as const;
const components = ['updater', 'ws', 'heartbeat'] as const;

/** 600 entries over 30 hours, one every 3 minutes, levels and components cycling; every 50th mentions 100%. */
const entries = Array.from({ length: 600 }, (_, i) => ({
  timestamp: at(i * 3),
  level: levels[i % 4]!,
  component: components[i % 3]!,
  message: i % 50 === 0 ? `disk 100% full on C: (${i})` : `routine message ${i}`,
  fields: { i },
}));

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  agent = await enrollDevice(t.api, tenant, 'list-1');
  for (let first = 0; first < entries.length; first += 500) {
    const reply = await submitLogs(t.api, agent, entries.slice(first, first + 500));
    if (reply.status !== 201) throw new Error(JSON.stringify(reply.body));
  }
});

const list = (query: string, token = tenant.orgToken, deviceId = agent.deviceId) =>
  t.api.request('GET', `/api/v1/devices/${deviceId}/diagnostic-logs${query ? `?${query}` : ''}`, { token });

const expected = (keep: (e: (typeof entries)[number]) => boolean) =>
  entries.filter(keep).sort((a, b) => b.timestamp.localeCompare(a.timestamp));

describe('GET /api/v1/devices/{id}/diagnostic-logs', () => {
  it("pages the device's entries newest first in the list envelope", async () => {
    const reply = await list('limit=2&page=2');
    expect(reply.status).toBe(200);
    expect(reply.body.pagination).toEqual({ page: 2, limit: 2, total: 600, totalPages: 300 });
    expect(reply.body.data).toEqual([
      {
        id: expect.any(String),
        deviceId: agent.deviceId,
        orgId: tenant.orgId,
        timestamp: at(597 * 3),
        level: levels[597 % 4],
        component: components[597 % 3],
        message: 'routine message 597',
        fields: { i: 597 },
        agentVersion: null,
        createdAt: expect.any(String),
      },
      expect.objectContaining({ message: 'routine message 596' }),
    ]);
  });

  it('defaults to page 1 of 50 and clamps a limit above 1000 to 1000', async () => {
    const first = await list('');
    expect(first.body.pagination).toEqual({ page: 1, limit: 50, total: 600, totalPages: 12 });
    const clamped = await list('limit=5000');
    expect(clamped.body.pagination.limit).toBe(1000);
    expect(clamped.body.data).toHaveLength(600);
    expect((await list('limit=0')).status).toBe(400);
    expect((await list('page=0')).status).toBe(400);
  });

  it('filters by one or more levels, comma-separated', async () => {
    const reply = await list('level=warn,error&limit=1000');
    const want = expected((e) => e.level === 'warn' || e.level === 'error');
    expect(reply.body.pagination.total).toBe(want.length);
    expect(reply.body.data.map((d: { message: string }) => d.message)).toEqual(want.map((e) => e.message));
    expect((await list('level=debug')).body.pagination.total).toBe(150);
  });

  it('reads warning as warn and information as info, and answers in its own words', async () => {
    const reply = await list('level=warning,information&limit=1000');
    const want = expected((e) => e.level === 'warn' || e.level === 'info');
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((d: { level: string }) => d.level)).toEqual(want.map((e) => e.level));
  });

  it('refuses an unknown level with 400 naming query.level', async () => {
    const reply = await list('level=warn,fatal');
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toMatch(/^query\.level/);
  });

  it('filters by exact component', async () => {
    expect((await list('component=ws')).body.pagination.total).toBe(200);
    expect((await list('component=W')).body.pagination.total).toBe(0);
  });

  it('filters by since and until, both inclusive', async () => {
    const since = at(90);
    const until = at(300);
    const reply = await list(`since=${since}&until=${until}&limit=1000`);
    const want = expected((e) => e.timestamp >= since && e.timestamp <= until);
    expect(reply.body.pagination.total).toBe(want.length);
    expect(reply.body.data.map((d: { timestamp: string }) => d.timestamp)).toEqual(want.map((e) => e.timestamp));
  });

  it('searches the message case-insensitively, with LIKE wildcards taken literally', async () => {
    const reply = await list('search=DISK%20100%25&limit=1000');
    expect(reply.body.pagination.total).toBe(12);
    expect(reply.body.data.every((d: { message: string }) => d.message.startsWith('disk 100% full'))).toBe(true);
    expect((await list('search=100_')).body.pagination.total).toBe(0);
    expect((await list('search=%25')).body.pagination.total).toBe(12);
  });

  it('combines the filters', async () => {
    const since = at(100);
    const until = at(1500);
    const reply = await list(
      `level=info,error&component=updater&since=${since}&until=${until}&search=routine&limit=1000`,
    );
    const want = expected(
      (e) =>
        ['info', 'error'].includes(e.level) &&
        e.component === 'updater' &&
        e.timestamp >= since &&
        e.timestamp <= until &&
        e.message.includes('routine'),
    );
    expect(reply.body.pagination.total).toBe(want.length);
    expect(reply.body.data.map((d: { message: string }) => d.message)).toEqual(want.map((e) => e.message));
  });

  it('counts totals exactly for any time range, across whole and partial hours', async () => {
    const random = (n: number) => Math.floor(Math.random() * n);
    for (let i = 0; i < 25; i++) {
      const from = random(2000) - 100;
      const to = from + random(2000) - 200;
      const since = new Date(base + from * 60_000 + random(60) * 1000).toISOString();
      const until = new Date(base + to * 60_000 + random(60) * 1000).toISOString();
      const filters = [
        { query: '', keep: () => true },
        {
          query: '&level=warn,debug',
          keep: (e: (typeof entries)[number]) => e.level === 'warn' || e.level === 'debug',
        },
        { query: '&component=heartbeat', keep: (e: (typeof entries)[number]) => e.component === 'heartbeat' },
      ][i % 3]!;
      const reply = await list(`since=${since}&until=${until}${filters.query}&limit=1`);
      const want = entries.filter((e) => e.timestamp >= since && e.timestamp <= until && filters.keep(e)).length;
      expect(reply.body.pagination.total, `${since} .. ${until}${filters.query}`).toBe(want);
    }
    // Boundaries exactly on the hour, open ends, and an empty range.
    expect((await list(`since=${at(60)}&limit=1`)).body.pagination.total).toBe(
      entries.filter((e) => e.timestamp >= at(60)).length,
    );
    expect((await list(`until=${at(120)}&limit=1`)).body.pagination.total).toBe(
      entries.filter((e) => e.timestamp <= at(120)).length,
    );
    expect((await list(`since=${at(600)}&until=${at(60)}`)).body.pagination.total).toBe(0);
  });

  it('reads a time without offset as UTC and ignores empty parameters', async () => {
    const naive = at(300).replace('Z', '');
    expect((await list(`since=${naive}&level=&component=&search=`)).body.pagination.total).toBe(
      entries.filter((e) => e.timestamp >= at(300)).length,
    );
    expect((await list('since=yesterday')).status).toBe(400);
  });

  it('is open to partner users and organization viewers (logs:read)', async () => {
    expect((await list('limit=1', tenant.partnerToken)).status).toBe(200);
    expect((await list('limit=1', await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer'))).status).toBe(200);
  });

  it('is 403 without logs:read', async () => {
    const token = await orgUser(tenant.partnerId, tenant.orgId, 'org_admin', { permissions: ['devices:read'] });
    expect((await list('', token)).status).toBe(403);
  });

  it("is 404 for another tenant's device and for a device that does not exist", async () => {
    expect((await list('', other.orgToken)).status).toBe(404);
    expect((await list('', await partnerUser(other.partnerId))).status).toBe(404);
    expect((await list('', tenant.orgToken, randomUUID())).status).toBe(404);
  });

  it('is 401 without a token and for an agent token', async () => {
    expect((await t.api.request('GET', `/api/v1/devices/${agent.deviceId}/diagnostic-logs`)).status).toBe(401);
    expect((await list('', agent.token)).status).toBe(401);
  });
});
