import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Tree');
  other = await createTenant(t.api, 'Other');
});

const call = (path: 'import' | 'import/preview', body: unknown, token = tenant.partnerToken) =>
  t.api.request('POST', `/api/v1/orgs/${path}`, { token, body });
const orgsNamed = async (partnerId: string) =>
  (
    await t.db.admin.query<{ name: string; sites: string[] }>(
      `SELECT o.name, array_agg(s.name ORDER BY s.name) AS sites FROM organizations o JOIN sites s ON s.org_id = o.id
        WHERE o.partner_id = :partnerId::uuid AND o.deleted_at IS NULL GROUP BY o.id, o.name ORDER BY o.name`,
      { partnerId },
    )
  ).rows;

const rows = [
  { name: 'Contoso', externalId: 'c-1', siteName: 'HQ', timezone: 'Europe/Berlin' },
  { name: 'Contoso', externalId: 'c-1', siteName: 'Branch', timezone: 'Europe/Paris' },
  { name: 'Fabrikam', externalId: 'f-1' },
  { name: 'Tree Corp', externalId: 't-1', siteName: 'Main' },
  { name: 'Bad', timezone: 'Mars/Olympus' },
  { name: 'Dup A', externalId: 'd-1' },
  { name: 'Dup B', externalId: 'd-1' },
];

describe('tenancy-tree import', () => {
  it('previews each row annotated and stores nothing', async () => {
    const before = await orgsNamed(tenant.partnerId);
    const reply = await call('import/preview', { sourceSystem: 'datto-rmm', rows });
    expect(reply.status).toBe(200);
    expect(reply.body.rows.map((r: { annotation: string }) => r.annotation)).toEqual([
      'create',
      'create',
      'create',
      'name-match',
      'invalid',
      'conflict',
      'conflict',
    ]);
    expect(reply.body.rows[4].issues[0].path).toBe('timezone');
    expect(reply.body.summary).toEqual({ create: 3, update: 0, unchanged: 0, held: 1, refused: 3 });
    expect(await orgsNamed(tenant.partnerId)).toEqual(before);
  });

  it('commits: creates organizations and sites, holds the name-match, audits each and a summary; re-import matches', async () => {
    const committed = await call('import', { sourceSystem: 'datto-rmm', rows });
    expect(committed.status).toBe(200);
    expect(committed.body.summary).toEqual({ create: 3, update: 0, unchanged: 0, held: 1, refused: 3 });
    expect(await orgsNamed(tenant.partnerId)).toEqual([
      { name: 'Contoso', sites: ['Branch', 'HQ'] },
      { name: 'Fabrikam', sites: ['Main'] },
      { name: 'Tree Corp', sites: ['Main'] },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { rows: audit } = await t.db.admin.query<{ action: string; n: number }>(
      `SELECT action, count(*)::int AS n FROM audit_logs a JOIN organizations o ON o.id = a.org_id
        WHERE o.partner_id = :partnerId::uuid AND action IN ('organization.create', 'site.create', 'organization.import')
        GROUP BY action ORDER BY action`,
      { partnerId: tenant.partnerId },
    );
    expect(audit).toEqual([
      { action: 'organization.create', n: 2 },
      { action: 'organization.import', n: 2 },
      { action: 'site.create', n: 3 },
    ]);
    const again = await call('import/preview', { sourceSystem: 'datto-rmm', rows: rows.slice(0, 3) });
    expect(again.body.rows.map((r: { annotation: string }) => r.annotation)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
    ]);
    const recommit = await call('import', { sourceSystem: 'datto-rmm', rows: rows.slice(0, 3) });
    expect(recommit.body.summary).toMatchObject({ create: 0, unchanged: 3 });
  });

  it('links a held name-match only when acknowledged with its target, and refuses a stale acknowledgement', async () => {
    const preview = await call('import/preview', { sourceSystem: 'datto-rmm', rows: [rows[3]] });
    const targetId = preview.body.rows[0].organizationId;
    expect(targetId).toBe(tenant.orgId);
    const stale = await call('import', {
      sourceSystem: 'datto-rmm',
      rows: [{ ...rows[3], acknowledge: { annotation: 'create' } }],
    });
    expect(stale.body.rows[0]).toMatchObject({ outcome: 'refused' });
    const linked = await call('import', {
      sourceSystem: 'datto-rmm',
      rows: [{ ...rows[3], acknowledge: { annotation: 'name-match', targetId } }],
    });
    expect(linked.body.rows[0]).toMatchObject({ outcome: 'update', organizationId: tenant.orgId });
    const after = await call('import/preview', { sourceSystem: 'datto-rmm', rows: [rows[3]] });
    expect(after.body.rows[0].annotation).toBe('unchanged');
  });

  it('reads CSV, refuses organization users (403) and more than 1,000 rows (400)', async () => {
    const csv = 'Name,External ID,Site Name,Timezone\r\nNorthwind,n-1,Depot,America/Chicago\r\n';
    const reply = await call('import/preview', { sourceSystem: 'datto-rmm', csv });
    expect(reply.body.rows[0]).toMatchObject({ annotation: 'create', name: 'Northwind', siteName: 'Depot' });
    expect((await call('import/preview', { sourceSystem: 'x', rows }, tenant.orgToken)).status).toBe(403);
    const many = Array.from({ length: 1001 }, (_, i) => ({ name: `Org ${i}` }));
    expect((await call('import/preview', { sourceSystem: 'x', rows: many })).status).toBe(400);
  });

  it('accepts the same fields per row in JSON and CSV: a repeated sourceSystem, blank cells and strings absent', async () => {
    const json = await call('import/preview', {
      sourceSystem: 'datto-rmm',
      rows: [
        { name: 'Initech', sourceSystem: 'datto-rmm', externalId: 'i-1', siteName: '', timezone: ' ' },
        { name: 'Umbrella', sourceSystem: 'ninjaone', externalId: 'u-1' },
      ],
    });
    const csv = await call('import/preview', {
      sourceSystem: 'datto-rmm',
      csv: 'name,sourceSystem,externalId,siteName,timezone\nInitech,datto-rmm,i-1,,\nUmbrella,ninjaone,u-1,,\n',
    });
    for (const reply of [json, csv]) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.rows).toMatchObject([
        { row: 1, externalId: 'i-1', annotation: 'create', outcome: 'create', name: 'Initech' },
        { row: 2, externalId: 'u-1', annotation: 'invalid', outcome: 'refused', issues: [{ path: 'sourceSystem' }] },
      ]);
    }
    expect(csv.body.rows).toEqual(json.body.rows);
  });

  it("never matches another partner's organizations", async () => {
    const reply = await call(
      'import/preview',
      { sourceSystem: 'datto-rmm', rows: [{ name: 'Other Corp' }] },
      other.partnerToken,
    );
    expect(reply.body.rows[0].annotation).toBe('name-match');
    const mine = await call('import/preview', { sourceSystem: 'datto-rmm', rows: [{ name: 'Other Corp' }] });
    expect(mine.body.rows[0].annotation).toBe('create');
  });
});
