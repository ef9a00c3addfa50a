import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Agent, submitEvents } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let agent: Agent;

const base = Date.parse('2026-03-01T00:00:00Z');
const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
const levels = ['info', 'warning', 'error', 'critical'] as const;
const categories = ['security', 'hardware', 'application', 'system'] as const;
const sources = ['Service Control Manager', 'Microsoft-Windows-Security-Auditing', 'disk'] as const;

/** 700 events over about 35 hours, levels, categories and sources cycling out of step. */
const events = Array.from({ length: 700 }, (_, i) => ({
  timestamp: at(i * 3),
  level: levels[i % 4]!,
  category: categories[Math.floor(i / 4) % 4]!,
  source: sources[i % 3]!,
  eventId: String(i),
  message: `event ${i}`,
}));
type Event = (typeof events)[number];

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  agent = await enrollDevice(t.api, tenant, 'eventlist-1');
  const reply = await submitEvents(t.api, agent, events);
  if (reply.body.count !== 700) throw new Error(JSON.stringify(reply.body));
});

const list = (query: string, token = tenant.orgToken, deviceId = agent.deviceId) =>
  t.api.request('GET', `/api/v1/devices/${deviceId}/eventlogs${query ? `?${query}` : ''}`, { token });

const expectMatches = async (query: string, keep: (e: Event) => boolean) => {
  const reply = await list(`${query}&limit=500`);
  expect(reply.status).toBe(200);
  const want = events.filter(keep).sort((a, b) => b.timestamp.localeCompare(a.timestamp));
  expect(reply.body.pagination.total, query).toBe(want.length);
  expect(
    reply.body.data.map((d: { eventId: string }) => d.eventId),
    query,
  ).toEqual(want.slice(0, 500).map((e) => e.eventId));
};

describe('GET /api/v1/devices/{id}/eventlogs', () => {
  it("pages the device's events newest first in the list envelope", async () => {
    const reply = await list('limit=1');
    expect(reply.body).toEqual({
      data: [
        {
          id: expect.any(String),
          deviceId: agent.deviceId,
          orgId: tenant.orgId,
          timestamp: at(699 * 3),
          level: levels[699 % 4],
          category: categories[Math.floor(699 / 4) % 4],
          source: sources[699 % 3],
          eventId: '699',
          message: 'event 699',
          details: {},
          createdAt: expect.any(String),
        },
      ],
      pagination: { page: 1, limit: 1, total: 700, totalPages: 700 },
    });
  });

  it('clamps a limit above 500 to 500', async () => {
    const reply = await list('limit=501');
    expect(reply.body.pagination).toEqual({ page: 1, limit: 500, total: 700, totalPages: 2 });
    expect(reply.body.data).toHaveLength(500);
    expect((await list('limit=500&page=2')).body.data).toHaveLength(200);
  });

  it('filters by category', () => expectMatches('category=hardware', (e) => e.category === 'hardware'));

  it('filters by level, and by several comma-separated', async () => {
    await expectMatches('level=critical', (e) => e.level === 'critical');
    await expectMatches('level=error,critical', (e) => e.level === 'error' || e.level === 'critical');
  });

  it('reads warn as warning and information as info, and answers in its own words', async () => {
    await expectMatches('level=warn,information', (e) => e.level === 'warning' || e.level === 'info');
    await expectMatches('level=WARN', (e) => e.level === 'warning');
  });

  it('filters by exact source', async () => {
    await expectMatches('source=disk', (e) => e.source === 'disk');
    expect((await list('source=Disk')).body.pagination.total).toBe(0);
  });

  it('filters by startDate and endDate, both inclusive', () =>
    expectMatches(`startDate=${at(300)}&endDate=${at(900)}`, (e) => e.timestamp >= at(300) && e.timestamp <= at(900)));

  it('combines the filters', () =>
    expectMatches(
      `category=security&level=info,warning&source=Service%20Control%20Manager&startDate=${at(60)}&endDate=${at(1800)}`,
      (e) =>
        e.category === 'security' &&
        (e.level === 'info' || e.level === 'warning') &&
        e.source === 'Service Control Manager' &&
        e.timestamp >= at(60) &&
        e.timestamp <= at(1800),
    ));

  it('refuses an unknown category or level and a malformed date with 400', async () => {
    expect((await list('category=network')).status).toBe(400);
    expect((await list('level=notice')).status).toBe(400);
    const bad = await list('startDate=not-a-date');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe('query.startDate');
  });

  it("is 403 without logs:read and 404 for another tenant's or an unknown device", async () => {
    expect(
      (await list('', await orgUser(tenant.partnerId, tenant.orgId, 'org_admin', { permissions: ['devices:read'] })))
        .status,
    ).toBe(403);
    expect((await list('', other.orgToken)).status).toBe(404);
    expect((await list('', tenant.orgToken, randomUUID())).status).toBe(404);
  });
});
