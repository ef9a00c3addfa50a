import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;

const importPath = (orgId: string, preview = false) =>
  `/api/v1/orgs/organizations/${orgId}/device-groups/import${preview ? '/preview' : ''}`;
const saved = (externalId: string, name: string, filter: unknown) => ({
  externalId,
  sourceSystem: 'ninjaone',
  name,
  filter,
});
const windows = { field: 'osType', op: 'equals', value: 'windows' };
const servers = { all: [windows, { field: 'hostname', op: 'startsWith', value: 'srv-' }] };

async function groupCount(orgId: string) {
  const { rows } = await t.db.admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM device_groups WHERE org_id = :orgId::uuid',
    { orgId },
  );
  return rows[0]!.n;
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
  await enrollDevice(t.api, tenant, 'srv-01');
  await t.db.admin.query(`UPDATE devices SET os_type = 'windows' WHERE hostname = 'srv-01'`);
});

describe('saved-filter import', () => {
  it('previews, creates dynamic groups, and a second identical import changes nothing and says so per row', async () => {
    const body = { groups: [saved('17', 'Windows', windows), saved('18', 'Windows servers', servers)] };
    const preview = await t.api.request('POST', importPath(tenant.orgId, true), { token: tenant.orgToken, body });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({
      committed: false,
      summary: { create: 2, update: 0, unchanged: 0, held: 0, refused: 0 },
      rows: [
        { row: 1, externalId: '17', annotation: 'create', outcome: 'create' },
        { row: 2, externalId: '18', annotation: 'create', outcome: 'create' },
      ],
    });
    expect(await groupCount(tenant.orgId)).toBe(0);
    const commit = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body });
    expect(commit.body.summary.create).toBe(2);
    const group = await t.api.request('GET', `/api/v1/device-groups/${commit.body.rows[1].groupId}`, {
      token: tenant.orgToken,
    });
    expect(group.body).toMatchObject({ type: 'dynamic', filter: servers, sourceSystem: 'ninjaone', externalId: '18' });
    const members = await t.api.request('GET', `/api/v1/device-groups/${group.body.id}/members`, {
      token: tenant.orgToken,
    });
    expect(members.body.data.map((d: { hostname: string }) => d.hostname)).toEqual(['srv-01']);
    const again = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body });
    expect(again.body.rows.map((r: { annotation: string; outcome: string }) => [r.annotation, r.outcome])).toEqual([
      ['unchanged', 'unchanged'],
      ['unchanged', 'unchanged'],
    ]);
    expect(await groupCount(tenant.orgId)).toBe(2);
    const renamed = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { groups: [saved('17', 'All Windows', windows)] },
    });
    expect(renamed.body.rows[0]).toMatchObject({ annotation: 'update', outcome: 'update' });
    const { rows: audits } = await t.db.admin.query<{ action: string }>(
      `SELECT action FROM audit_logs WHERE org_id = :orgId::uuid AND action LIKE 'device_group.%' ORDER BY seq`,
      { orgId: tenant.orgId },
    );
    expect(audits.map((a) => a.action)).toEqual([
      'device_group.create',
      'device_group.create',
      'device_group.import',
      'device_group.import',
      'device_group.update',
      'device_group.import',
    ]);
  });

  it('reports a filter that does not check for its row, never half-importing it, and applies the rest', async () => {
    const reply = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        groups: [
          saved('30', 'Broken', { all: [windows, { field: 'registry', op: 'equals', value: 'x' }] }),
          saved('31', 'Fine', { field: 'online', op: 'equals', value: true }),
          saved('32', 'Dup', windows),
          saved('32', 'Dup 2', windows),
          saved('33', 'all windows', windows),
        ],
      },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.rows).toMatchObject([
      { row: 1, annotation: 'invalid', outcome: 'refused', issues: [{ path: 'filter.all.1.field' }] },
      { row: 2, annotation: 'create', outcome: 'create' },
      { row: 3, annotation: 'conflict', outcome: 'refused' },
      { row: 4, annotation: 'conflict', outcome: 'refused' },
      { row: 5, annotation: 'conflict', reason: expect.stringMatching(/already exists/) },
    ]);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM device_groups WHERE external_id IN ('30', '32', '33')`);
    expect(rows).toEqual([]);
  });

  it("is scoped to the organization: another tenant's import of the same keys is its own, and its route is 404", async () => {
    const body = { groups: [saved('17', 'Windows', windows)] };
    const theirs = await t.api.request('POST', importPath(other.orgId), { token: other.orgToken, body });
    expect(theirs.body.rows[0].annotation).toBe('create');
    expect((await t.api.request('POST', importPath(other.orgId), { token: tenant.orgToken, body })).status).toBe(404);
  });
});
