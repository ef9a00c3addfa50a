import { beforeAll, describe, expect, it } from 'vitest';
import { postureCatalog } from '#shared/posture/catalog.ts';
import type { Agent } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
const agents: Record<string, Agent> = {};
const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

const upload = (agent: Agent, body: unknown, agentId = agent.agentId) =>
  t.api.request('PUT', `/api/v1/agents/${agentId}/management-posture`, { token: agent.token, body });
const report = (token: string, query = '') =>
  t.api.request('GET', `/api/v1/reports/management-posture${query}`, { token });
const drill = (token: string, query: string) =>
  t.api.request('GET', `/api/v1/reports/management-posture/devices?${query}`, { token });

const datto = (status: 'active' | 'installed') => ({ rmm: [{ name: 'Datto RMM', version: '4.4.2', status }] });

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Posture');
  other = await createTenant(t.api, 'Elsewhere');
  for (const name of ['old-active', 'old-installed', 'clean', 'never', 'stale'])
    agents[name] = await enrollDevice(t.api, tenant, name);
  agents.foreign = await enrollDevice(t.api, other, 'foreign');
  const uploads: [string, unknown][] = [
    [
      'old-active',
      {
        collectedAt: daysAgo(0),
        categories: { ...datto('active'), 'remote-access': [{ name: 'TeamViewer', status: 'installed' }] },
      },
    ],
    ['old-installed', { collectedAt: daysAgo(0), categories: datto('installed') }],
    ['clean', { collectedAt: daysAgo(0), categories: {} }],
    ['stale', { collectedAt: daysAgo(10), categories: datto('active') }],
    ['foreign', { collectedAt: daysAgo(0), categories: datto('active') }],
  ];
  for (const [name, body] of uploads) expect((await upload(agents[name]!, body)).status).toBe(200);
});

describe('PUT /api/v1/agents/{id}/management-posture', () => {
  it('stores the snapshot and replies with what it kept', async () => {
    const agent = await enrollDevice(t.api, other, 'receipt');
    const collectedAt = daysAgo(1);
    const reply = await upload(agent, { collectedAt, categories: datto('active') });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ deviceId: agent.deviceId, collectedAt, detections: 1, applied: true });
  });

  it('keeps the latest snapshot: an older upload arriving late changes nothing', async () => {
    const agent = await enrollDevice(t.api, other, 'late');
    await upload(agent, { collectedAt: daysAgo(1), categories: datto('installed') });
    const late = await upload(agent, { collectedAt: daysAgo(2), categories: datto('active') });
    expect(late.body).toMatchObject({ applied: false });
    const { rows } = await t.db.admin.query(
      'SELECT status FROM device_posture_detections WHERE device_id = :id::uuid',
      {
        id: agent.deviceId,
      },
    );
    expect(rows).toEqual([{ status: 'installed' }]);
  });

  it('audits device.posture.changed with before and after only when the detections change', async () => {
    const agent = await enrollDevice(t.api, other, 'audited');
    await upload(agent, { collectedAt: daysAgo(3), categories: datto('active') });
    await upload(agent, { collectedAt: daysAgo(2), categories: datto('active') });
    await upload(agent, { collectedAt: daysAgo(1), categories: {} });
    const { rows } = await t.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'device.posture.changed' AND resource_id = :id::uuid ORDER BY seq`,
      { id: agent.deviceId },
    );
    expect(rows.map((r) => [r.details.before, r.details.after])).toEqual([
      [{ detections: [] }, { detections: ['rmm/Datto RMM active'] }],
      [{ detections: ['rmm/Datto RMM active'] }, { detections: [] }],
    ]);
  });

  it.each([
    [{ collectedAt: daysAgo(0), categories: { antivirus: [] } }, 'body.categories.antivirus'],
    [
      { collectedAt: daysAgo(0), categories: { rmm: [{ name: 'Atera', status: 'running' }] } },
      'body.categories.rmm.0.status',
    ],
    [{ categories: {} }, 'body.collectedAt'],
    [
      {
        collectedAt: daysAgo(0),
        categories: {
          rmm: [
            { name: 'Atera', status: 'active' },
            { name: 'atera', status: 'installed' },
          ],
        },
      },
      'body.categories.rmm',
    ],
  ])('refuses %j with a 400 naming the field and stores nothing', async (body, field) => {
    const agent = await enrollDevice(t.api, other, `bad-${field}`);
    const reply = await upload(agent, body);
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toContain(field.split('.').at(-1)!);
    const { rows } = await t.db.admin.query('SELECT 1 FROM device_posture WHERE device_id = :id::uuid', {
      id: agent.deviceId,
    });
    expect(rows).toEqual([]);
  });

  it("refuses another agent's id (403) and a missing token (401)", async () => {
    expect(
      (await upload(agents.clean!, { collectedAt: daysAgo(0), categories: {} }, agents.never!.agentId)).status,
    ).toBe(403);
    const anonymous = await t.api.request('PUT', `/api/v1/agents/${agents.clean!.agentId}/management-posture`, {
      body: { collectedAt: daysAgo(0), categories: {} },
    });
    expect(anonymous.status).toBe(401);
  });
});

describe('GET /api/v1/agents/{id}/posture-catalog', () => {
  it('serves the catalogue with service and process names on every platform', async () => {
    const agent = agents.clean!;
    const reply = await t.api.request('GET', `/api/v1/agents/${agent.agentId}/posture-catalog`, { token: agent.token });
    expect(reply.status).toBe(200);
    const names = reply.body.products.map((p: { name: string }) => p.name);
    for (const name of [
      'Datto RMM',
      'NinjaOne',
      'ConnectWise Automate',
      'ConnectWise ScreenConnect',
      'Kaseya VSA',
      'N-able N-central',
      'N-able N-sight',
      'Atera',
      'Syncro',
      'Tactical RMM',
      'MeshCentral',
      'TeamViewer',
      'AnyDesk',
      'Splashtop',
    ])
      expect(names).toContain(name);
    expect(reply.body.products).toHaveLength(postureCatalog.length);
    for (const product of reply.body.products)
      for (const platform of ['windows', 'macos', 'linux'])
        expect(product[platform].services.length + product[platform].processes.length).toBeGreaterThan(0);
  });
});

describe('GET /api/v1/reports/management-posture', () => {
  it('never counts a device never scanned as clean, and counts stale snapshots apart', async () => {
    const reply = await report(tenant.orgToken, `?orgId=${tenant.orgId}`);
    expect(reply.status).toBe(200);
    expect(reply.body.coverage).toEqual({ devices: 5, neverScanned: 1, stale: 1, clean: 1, withDetection: 2 });
    expect(reply.body.products).toEqual([
      { category: 'remote-access', product: 'TeamViewer', active: 0, installed: 1, stale: 0 },
      { category: 'rmm', product: 'Datto RMM', active: 1, installed: 1, stale: 1 },
    ]);
  });

  it('narrows the detections to a category: a device with detections elsewhere is clean there', async () => {
    const reply = await report(tenant.orgToken, '?category=remote-access');
    expect(reply.body.coverage).toEqual({ devices: 5, neverScanned: 1, stale: 1, clean: 2, withDetection: 1 });
    expect(reply.body.products.map((p: { product: string }) => p.product)).toEqual(['TeamViewer']);
  });

  it('moves a snapshot into stale by the staleness window given', async () => {
    const reply = await report(tenant.orgToken, '?staleDays=30');
    expect(reply.body.coverage).toMatchObject({ stale: 0, withDetection: 3 });
  });

  it("shows a partner its whole fleet and an organization user its organization; another tenant's is 404", async () => {
    const fleet = await report(tenant.partnerToken);
    expect(fleet.body.coverage.devices).toBe(5);
    const outsider = await report(other.orgToken, `?orgId=${tenant.orgId}`);
    expect(outsider.status).toBe(404);
    expect(JSON.stringify(outsider.body)).not.toContain(tenant.orgId);
    const own = await report(other.orgToken);
    const { rows } = await t.db.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL',
      { orgId: other.orgId },
    );
    expect(own.body.coverage.devices).toBe(rows[0]!.n);
  });

  it('downloads the report as CSV', async () => {
    const response = await fetch(`${t.api.url}/api/v1/reports/management-posture?orgId=${tenant.orgId}&format=csv`, {
      headers: { authorization: `Bearer ${tenant.orgToken}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/csv');
    const lines = (await response.text()).trim().split('\r\n');
    expect(lines[0]).toBe('category,product,status,devices');
    expect(lines).toContain('coverage,neverScanned,,1');
    expect(lines).toContain('rmm,Datto RMM,active,1');
  });
});

describe('GET /api/v1/reports/management-posture/devices', () => {
  it('lists the devices behind a product and status, stale ones flagged', async () => {
    const reply = await drill(tenant.orgToken, 'product=Datto%20RMM&status=active');
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((d: { hostname: string; stale: boolean }) => [d.hostname, d.stale])).toEqual([
      ['old-active', false],
      ['stale', true],
    ]);
    expect(reply.body.pagination).toMatchObject({ total: 2 });
  });

  it('pages and downloads CSV; a product or status missing is a 400', async () => {
    const paged = await drill(tenant.partnerToken, 'product=Datto%20RMM&status=active&limit=1&page=2');
    expect(paged.body.data.map((d: { hostname: string }) => d.hostname)).toEqual(['stale']);
    const response = await fetch(
      `${t.api.url}/api/v1/reports/management-posture/devices?product=Datto%20RMM&status=installed&format=csv`,
      { headers: { authorization: `Bearer ${tenant.orgToken}` } },
    );
    const lines = (await response.text()).trim().split('\r\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain('old-installed');
    expect((await drill(tenant.orgToken, 'status=active')).status).toBe(400);
    expect((await drill(tenant.orgToken, 'product=Datto%20RMM&status=running')).status).toBe(400);
  });

  it("is 404 for another tenant's organization", async () => {
    const viewer = await orgUser(other.partnerId, other.orgId, 'org_viewer');
    expect((await drill(viewer, `product=Datto%20RMM&status=active&orgId=${tenant.orgId}`)).status).toBe(404);
  });
});

describe('the posture field of the dynamic-group filter language', () => {
  it('selects the devices still running an RMM, or with a detection of a category at all', async () => {
    const preview = async (value: unknown) => {
      const reply = await t.api.request(
        'POST',
        `/api/v1/orgs/organizations/${tenant.orgId}/device-groups/preview?sort=hostname`,
        {
          token: tenant.orgToken,
          body: { filter: { field: 'posture', op: 'has', value } },
        },
      );
      expect(reply.status).toBe(200);
      return reply.body.data.map((d: { hostname: string }) => d.hostname);
    };
    expect(await preview({ category: 'rmm', product: 'datto rmm', status: 'active' })).toEqual(['old-active', 'stale']);
    expect(await preview({ category: 'rmm' })).toEqual(['old-active', 'old-installed', 'stale']);
    expect(await preview({ category: 'remote-access', status: 'installed' })).toEqual(['old-active']);
  });

  it('refuses a posture value of the wrong shape with a 400 naming its path', async () => {
    const reply = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups/preview`, {
      token: tenant.orgToken,
      body: { filter: { field: 'posture', op: 'equals', value: { category: 'rmm' } } },
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toContain('body.filter.op');
  });
});

describe('the report reads counts kept at upload time', () => {
  /** The product figures recomputed from the stored detections, row by row, for a window and a time. */
  async function recount(orgId: string, staleDays: number, asOf: string) {
    const { rows } = await t.db.admin.query(
      `SELECT x.category, x.product,
              count(*) FILTER (WHERE x.status = 'active' AND p.collected_at >= :asOf::timestamptz - make_interval(days => :staleDays::int))::int AS active,
              count(*) FILTER (WHERE x.status = 'installed' AND p.collected_at >= :asOf::timestamptz - make_interval(days => :staleDays::int))::int AS installed,
              count(*) FILTER (WHERE p.collected_at < :asOf::timestamptz - make_interval(days => :staleDays::int))::int AS stale
         FROM device_posture_detections x JOIN device_posture p ON p.device_id = x.device_id
         JOIN devices d ON d.id = x.device_id AND d.deleted_at IS NULL
        WHERE x.org_id = :orgId::uuid GROUP BY 1, 2 ORDER BY 1, 2`,
      { orgId, staleDays, asOf },
    );
    return rows;
  }

  it('splits the day of the staleness boundary exactly, at the time of the request', async () => {
    const edge = await createTenant(t.api, 'Edge');
    const week = 7 * 86_400_000;
    // Minutes either side of the 7-day boundary, and whole days either side of it.
    const offsets = {
      justFresh: -10 * 60_000,
      justStale: 10 * 60_000,
      dayFresh: -2 * 86_400_000,
      dayStale: 86_400_000 * 2,
    };
    for (const [name, offset] of Object.entries(offsets)) {
      const agent = await enrollDevice(t.api, edge, name);
      const collectedAt = new Date(Date.now() - week - offset).toISOString();
      expect((await upload(agent, { collectedAt, categories: datto('active') })).status).toBe(200);
    }
    const reply = await report(edge.orgToken);
    expect(reply.body.coverage).toEqual({ devices: 4, neverScanned: 0, stale: 2, clean: 0, withDetection: 2 });
    expect(reply.body.products).toEqual([{ category: 'rmm', product: 'Datto RMM', active: 2, installed: 0, stale: 2 }]);
    expect(reply.body.products).toEqual(await recount(edge.orgId, 7, reply.body.generatedAt));
    // The partner's fleet: counts by hour around the boundary, the boundary's hour read row by row.
    const fleet = await report(edge.partnerToken);
    expect(fleet.body.coverage).toEqual(reply.body.coverage);
    expect(fleet.body.products).toEqual(reply.body.products);
  });

  it('follows snapshots that change, move days and go, and equals a recount for any window', async () => {
    const moving = await createTenant(t.api, 'Moving');
    const fleet: Agent[] = [];
    for (let i = 0; i < 12; i++) fleet.push(await enrollDevice(t.api, moving, `mover-${i}`));
    const products = [
      { rmm: [{ name: 'Datto RMM', status: 'active' }] },
      { rmm: [{ name: 'Datto RMM', status: 'installed' }], 'remote-access': [{ name: 'AnyDesk', status: 'active' }] },
      { 'remote-access': [{ name: 'AnyDesk', status: 'installed' }] },
      {},
    ];
    // Three rounds of snapshots, each newer than the last, with days and detections changing per device.
    for (let round = 0; round < 3; round++)
      for (const [i, agent] of fleet.entries()) {
        const collectedAt = daysAgo(((i * 7 + round * 5) % 13) / 2 + (2 - round) * 0.01 + 3 - round);
        const body = { collectedAt, categories: products[(i + round) % products.length] };
        expect((await upload(agent, body)).status).toBe(200);
      }
    expect(
      (await t.api.request('DELETE', `/api/v1/devices/${fleet[0]!.deviceId}`, { token: moving.orgToken })).status,
    ).toBe(204);
    for (const staleDays of [1, 2, 3, 4, 5, 7, 30]) {
      // One organization (counts by day) and its partner's fleet (counts by day and hour).
      for (const [token, query] of [
        [moving.orgToken, ''],
        [moving.partnerToken, ''],
        [moving.partnerToken, `&orgId=${moving.orgId}`],
      ] as const) {
        const reply = await report(token, `?staleDays=${staleDays}${query}`);
        expect(reply.body.products).toEqual(await recount(moving.orgId, staleDays, reply.body.generatedAt));
        expect(reply.body.coverage.devices).toBe(11);
      }
    }
    // The deleted device's snapshot is gone, no count is kept at zero, and the counts are a recount's.
    const { rows } = await t.db.admin.query(
      `SELECT (SELECT count(*)::int FROM device_posture WHERE device_id = :id::uuid) AS snapshots,
              (SELECT count(*)::int FROM posture_counts WHERE devices <= 0) AS zeros,
              (SELECT count(*)::int FROM ((SELECT * FROM posture_counts EXCEPT SELECT * FROM posture_recount())
                UNION ALL (SELECT * FROM posture_recount() EXCEPT SELECT * FROM posture_counts)) d) AS drift`,
      { id: fleet[0]!.deviceId },
    );
    expect(rows[0]).toEqual({ snapshots: 0, zeros: 0, drift: 0 });
    // A deleted organization's snapshots leave its partner's counts.
    const gone = await t.api.request('DELETE', `/api/v1/orgs/organizations/${moving.orgId}`, {
      token: moving.partnerToken,
    });
    expect(gone.status).toBe(204);
    const { rows: left } = await t.db.admin.query(
      'SELECT count(*)::int AS n FROM posture_counts WHERE scope_id IN (:orgId::uuid, :partnerId::uuid)',
      { orgId: moving.orgId, partnerId: moving.partnerId },
    );
    expect(left[0]).toEqual({ n: 0 });
    expect((await report(moving.partnerToken)).body.coverage).toMatchObject({ devices: 0, stale: 0, withDetection: 0 });
  });

  it('keeps counts equal to a recount under concurrent uploads racing a device deletion', async () => {
    const busy = await createTenant(t.api, 'Busy');
    const fleet: Agent[] = [];
    for (let i = 0; i < 8; i++) fleet.push(await enrollDevice(t.api, busy, `busy-${i}`));
    const shapes = [
      datto('active'),
      datto('installed'),
      { 'remote-access': [{ name: 'AnyDesk', status: 'active' }] },
      {},
    ];
    // Each device uploads three snapshots at once (the newest wins), while one device is deleted meanwhile.
    const uploads = fleet.flatMap((agent, i) =>
      [0, 1, 2].map((round) =>
        upload(agent, { collectedAt: daysAgo(3 - round), categories: shapes[(i + round) % shapes.length] }),
      ),
    );
    const deletion = t.api.request('DELETE', `/api/v1/devices/${fleet[0]!.deviceId}`, { token: busy.orgToken });
    const replies = await Promise.all([...uploads, deletion]);
    expect((await deletion).status).toBe(204);
    // Uploads of the deleted device may be refused; every other upload is stored.
    for (const reply of replies.slice(3, uploads.length)) expect(reply.status).toBe(200);
    const { rows } = await t.db.admin.query(
      `SELECT (SELECT count(*)::int FROM ((SELECT * FROM posture_counts EXCEPT SELECT * FROM posture_recount())
                UNION ALL (SELECT * FROM posture_recount() EXCEPT SELECT * FROM posture_counts)) d) AS drift,
              (SELECT count(*)::int FROM device_posture WHERE device_id = :id::uuid) AS snapshots`,
      { id: fleet[0]!.deviceId },
    );
    expect(rows[0]).toEqual({ drift: 0, snapshots: 0 });
    const reply = await report(busy.orgToken, '?staleDays=30');
    expect(reply.body.coverage).toMatchObject({ devices: 7 });
    expect(reply.body.products).toEqual(await recount(busy.orgId, 30, reply.body.generatedAt));
  });
});
