import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import type { Agent } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { startSimulatedAgent } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let agent: Agent;
let simulated: Awaited<ReturnType<typeof startSimulatedAgent>>;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  agent = await enrollDevice(t.api, tenant, 'win-live-1');
  simulated = await startSimulatedAgent(t.api, agent, 'WIN-LIVE1.contoso.local');
});
afterAll(() => simulated?.stop());

/** The two namespaces of live queries; the list of logs exists under /system-tools only (GET /devices/{id}/eventlogs is the stored list). */
const namespaces = [
  ['system-tools', (deviceId: string) => `/api/v1/system-tools/devices/${deviceId}`],
  ['devices', (deviceId: string) => `/api/v1/devices/${deviceId}`],
] as const;

const get = (path: string, token = tenant.orgToken) => t.api.request('GET', path, { token });

describe('GET /api/v1/system-tools/devices/{deviceId}/eventlogs', () => {
  it("lists the device's event logs as its agent reports them, in the list envelope", async () => {
    const reply = await get(`/api/v1/system-tools/devices/${agent.deviceId}/eventlogs`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      data: simulated.store.list(),
      pagination: { page: 1, limit: 5, total: 5, totalPages: 1 },
    });
    expect(reply.body.data.map((log: { name: string }) => log.name)).toEqual([
      'Application',
      'System',
      'Security',
      'Setup',
      'Microsoft-Windows-Sysmon/Operational',
    ]);
    expect(Object.keys(reply.body.data[0]).sort()).toEqual([
      'displayName',
      'lastWriteTime',
      'maxSize',
      'name',
      'recordCount',
      'retentionDays',
    ]);
  });

  it('leaves GET /api/v1/devices/{id}/eventlogs to the stored event list', async () => {
    const reply = await get(`/api/v1/devices/${agent.deviceId}/eventlogs`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ data: [], pagination: { page: 1, limit: 50, total: 0, totalPages: 0 } });
  });
});

describe.each(namespaces)('the live routes under /%s', (_, device) => {
  it('return one event log, its name matched case-insensitively', async () => {
    const reply = await get(`${device(agent.deviceId)}/eventlogs/sEcUrItY`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(simulated.store.get('Security'));
    expect(reply.body.name).toBe('Security');
  });

  it('take a log name with a slash when it is encoded', async () => {
    const reply = await get(
      `${device(agent.deviceId)}/eventlogs/${encodeURIComponent('Microsoft-Windows-Sysmon/Operational')}`,
    );
    expect(reply.status).toBe(200);
    expect(reply.body.displayName).toBe('Sysmon Operational');
  });

  it("answer 404 with the agent's message for a log the device does not have", async () => {
    const reply = await get(`${device(agent.deviceId)}/eventlogs/NoSuchLog`);
    expect(reply.status).toBe(404);
    expect(reply.body.error).toEqual({
      code: 'NOT_FOUND',
      message: 'Event log NoSuchLog not found on WIN-LIVE1.contoso.local',
    });
  });

  it("page a log's events newest first, with the total", async () => {
    const reply = await get(`${device(agent.deviceId)}/eventlogs/System/events?limit=3&page=2`);
    expect(reply.status).toBe(200);
    const expected = simulated.store.events('System', { page: 2, limit: 3 })!;
    expect(reply.body).toEqual({
      data: expected.events,
      pagination: { page: 2, limit: 3, total: expected.total, totalPages: Math.ceil(expected.total / 3) },
    });
    const ids = reply.body.data.map((e: { recordId: number }) => e.recordId);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });

  it('filter events by level, source, event id and time, as the agent applies them', async () => {
    const all = simulated.store.events('Security', { page: 1, limit: 10_000 })!.events;
    const middle = all[Math.floor(all.length / 2)]!.timeCreated;
    const reply = await get(
      `${device(agent.deviceId)}/eventlogs/security/events?level=warning&source=microsoft-windows-security-auditing&eventId=4625&startTime=${middle}&limit=500`,
    );
    expect(reply.status).toBe(200);
    const want = all.filter((e) => e.level === 'warning' && e.eventId === 4625 && e.timeCreated >= middle);
    expect(want.length).toBeGreaterThan(10);
    expect(reply.body.pagination.total).toBe(want.length);
    expect(reply.body.data.map((e: { recordId: number }) => e.recordId)).toEqual(want.map((e) => e.recordId));
  });

  it('return one event by its record id, with rawXml in the Windows event schema', async () => {
    const [latest] = simulated.store.events('Application', { page: 1, limit: 1 })!.events;
    const reply = await get(`${device(agent.deviceId)}/eventlogs/application/events/${latest!.recordId}`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(latest);
    expect(Object.keys(reply.body).sort()).toEqual(
      [
        'category',
        'computer',
        'eventId',
        'level',
        'message',
        'rawXml',
        'recordId',
        'source',
        'timeCreated',
        'user',
      ].sort(),
    );
    expect(reply.body.rawXml).toMatch(
      /^<Event xmlns="http:\/\/schemas\.microsoft\.com\/win\/2004\/08\/events\/event"><System><Provider Name=/,
    );
    expect(reply.body.rawXml).toContain(`<EventRecordID>${latest!.recordId}</EventRecordID>`);
  });

  it("answer 404 with the agent's message for a record the log does not have", async () => {
    const reply = await get(`${device(agent.deviceId)}/eventlogs/Application/events/1`);
    expect(reply.status).toBe(404);
    expect(reply.body.error.message).toBe('Record 1 not found in event log Application');
  });

  it("put an answer above API Gateway's 128 KB message limit together from its chunks", async () => {
    const reply = await get(`${device(agent.deviceId)}/eventlogs/Security/events?limit=500`);
    expect(reply.status).toBe(200);
    expect(JSON.stringify(reply.body.data).length).toBeGreaterThan(500 * 1024);
    expect(reply.body.data).toEqual(simulated.store.events('Security', { page: 1, limit: 500 })!.events);
  });

  it("answer 404 for another tenant's device, and for an unknown one, without asking any agent", async () => {
    expect((await get(`${device(agent.deviceId)}/eventlogs/System`, other.orgToken)).status).toBe(404);
    expect((await get(`${device(agent.deviceId)}/eventlogs/System/events`, other.partnerToken)).status).toBe(404);
    expect((await get(`${device('00000000-0000-4000-8000-000000000000')}/eventlogs/System/events/5`)).status).toBe(404);
  });

  it('need logs:read, which an organization viewer holds', async () => {
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await get(`${device(agent.deviceId)}/eventlogs/System`, viewer)).status).toBe(200);
    const none = await orgUser(tenant.partnerId, tenant.orgId, 'org_admin', { permissions: ['devices:read'] });
    expect((await get(`${device(agent.deviceId)}/eventlogs/System`, none)).status).toBe(403);
    expect((await t.api.request('GET', `${device(agent.deviceId)}/eventlogs/System`)).status).toBe(401);
  });
});

describe('query validation', () => {
  const events = (query: string) =>
    get(`/api/v1/system-tools/devices/${agent.deviceId}/eventlogs/System/events?${query}`);

  it.each([
    ['level=fatal', 'query.level'],
    ['eventId=abc', 'query.eventId'],
    ['eventId=-1', 'query.eventId'],
    ['eventId=1.5', 'query.eventId'],
    ['startTime=yesterday', 'query.startTime'],
    ['endTime=2026-13-01T00:00:00Z', 'query.endTime'],
    ['page=0', 'query.page'],
    ['limit=0', 'query.limit'],
    ['limit=ten', 'query.limit'],
  ])('refuses %s (400 naming %s)', async (query, path) => {
    const reply = await events(query);
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('VALIDATION_FAILED');
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it("reads the other log types' names of a level as its own: warn as warning, info as information", async () => {
    const total = (query: string) => events(`${query}&limit=1`).then((reply) => reply.body.pagination.total);
    expect(await total('level=warn')).toBe(await total('level=warning'));
    expect(await total('level=info')).toBe(await total('level=information'));
    expect(await total('level=information')).toBeGreaterThan(0);
  });

  it('names a missing or malformed parameter in words', async () => {
    const reply = await events('eventId=abc');
    expect(reply.body.error.message).toBe('Invalid query: Give a whole number in decimal digits');
  });

  it('clamps a limit above 500 to 500 and reads empty filters as none', async () => {
    const reply = await events('limit=100000&level=&source=');
    expect(reply.status).toBe(200);
    expect(reply.body.pagination.limit).toBe(500);
    expect(reply.body.pagination.total).toBe(simulated.store.get('System')!.recordCount);
  });

  it('refuses a device id that is no UUID and a record id that is no whole number', async () => {
    expect((await get('/api/v1/system-tools/devices/not-a-uuid/eventlogs')).status).toBe(400);
    const reply = await get(`/api/v1/devices/${agent.deviceId}/eventlogs/System/events/12x`);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('params.recordId');
  });
});

describe('the route table', () => {
  it('uses one parameter name at each position of a path, as API Gateway requires', () => {
    const paths = Object.keys(routes).map((key) => key.split(' ')[1]!.split('/'));
    for (const a of paths) {
      for (const b of paths) {
        for (let i = 0; i < Math.min(a.length, b.length); i++) {
          const sameParent = a
            .slice(0, i)
            .every((part, j) => part === b[j] || (part.startsWith('{') && b[j]!.startsWith('{')));
          if (sameParent && a[i]!.startsWith('{') && b[i]!.startsWith('{'))
            expect(a[i], `${a.join('/')} vs ${b.join('/')}`).toBe(b[i]);
        }
      }
    }
  });

  it('documents every live route in OpenAPI with a distinct operationId', async () => {
    const reply = await t.api.request('GET', '/api/v1/openapi.json');
    const operations = Object.values(
      reply.body.paths as Record<string, Record<string, { operationId: string }>>,
    ).flatMap((ops) => Object.values(ops));
    const ids = operations.map((op) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(reply.body.paths['/api/v1/devices/{id}/eventlogs/{name}/events'].get.responses['504']).toBeDefined();
  });
});
