import { beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '#shared/reconciliation/reconcile.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
const path = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/reconciliation`;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Wave');
  other = await createTenant(t.api, 'Other');
  for (const hostname of ['ws-01', 'ws-02', 'dup', 'dup', 'not-listed']) await enrollDevice(t.api, tenant, hostname);
});

const upload = (devices: unknown[], token = tenant.orgToken, orgId = tenant.orgId) =>
  t.api.request('POST', path(orgId), { token, body: { devices } });

describe('enrollment reconciliation', () => {
  it('states each listed device enrolled, missing or ambiguous, and each unlisted device extra', async () => {
    const reply = await upload([
      { hostname: 'WS-01', serial: 'SN1', externalId: 'old-1', organization: 'Wave Corp' },
      { hostname: 'ws-02' },
      { hostname: 'dup' },
      { hostname: 'laptop-9', serial: 'SN9' },
    ]);
    expect(reply.status).toBe(201);
    expect(reply.body.counts).toEqual({ enrolled: 2, missing: 1, extra: 1, ambiguous: 1 });
    const state = (hostname: string) => reply.body.devices.find((d: { hostname: string }) => d.hostname === hostname);
    expect(state('WS-01')).toMatchObject({
      state: 'enrolled',
      serial: 'SN1',
      externalId: 'old-1',
      deviceId: expect.any(String),
    });
    expect(state('dup')).toMatchObject({ state: 'ambiguous', deviceId: null });
    expect(state('dup').candidates).toHaveLength(2);
    expect(state('laptop-9')).toMatchObject({ state: 'missing', deviceId: null });
    expect(state('not-listed')).toMatchObject({ state: 'extra', deviceId: expect.any(String) });
  });

  it('keeps every upload: the latest states and the counts over time read again later', async () => {
    await upload([{ hostname: 'ws-01' }]);
    const progress = await t.api.request('GET', path(tenant.orgId), { token: tenant.orgToken });
    expect(progress.status).toBe(200);
    expect(progress.body.history.map((h: { counts: unknown }) => h.counts)).toEqual([
      { enrolled: 2, missing: 1, extra: 1, ambiguous: 1 },
      { enrolled: 1, missing: 0, extra: 4, ambiguous: 0 },
    ]);
    expect(progress.body.latest.counts).toEqual({ enrolled: 1, missing: 0, extra: 4, ambiguous: 0 });
    expect(progress.body.latest.devices).toHaveLength(5);
  });

  it('audits the upload with its counts', async () => {
    const { rows } = await t.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'organization.reconciliation.upload' AND org_id = :orgId::uuid ORDER BY seq`,
      { orgId: tenant.orgId },
    );
    expect(rows[0]!.details).toMatchObject({ rows: 4, enrolled: 2, missing: 1, extra: 1, ambiguous: 1 });
  });

  it("answers null before any upload, 400 naming a bad field, and 404 for another tenant's organization", async () => {
    const empty = await t.api.request('GET', path(other.orgId), { token: other.orgToken });
    expect(empty.body).toEqual({ latest: null, history: [] });
    const bad = await upload([{ serial: 'x' }]);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('hostname');
    expect((await upload([{ hostname: 'a' }], other.orgToken)).status).toBe(404);
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', path(tenant.orgId), { token: viewer })).status).toBe(200);
    expect((await upload([{ hostname: 'a' }], viewer)).status).toBe(403);
  });

  it('reconciles a 10,000-device list by hostname', () => {
    const enrolled = Array.from({ length: 10_000 }, (_, i) => ({
      id: `${i}`,
      hostname: `host-${i}`,
      serialNumber: null,
    }));
    const listed = Array.from({ length: 10_000 }, (_, i) => ({ hostname: `host-${i + 500}` }));
    const { counts } = reconcile(listed, enrolled);
    expect(counts).toEqual({ enrolled: 9_500, missing: 500, extra: 500, ambiguous: 0 });
  });

  it('matches by serial number before hostname, never on a placeholder serial, and holds a shared serial as ambiguous', () => {
    const enrolled = [
      { id: 'renamed', hostname: 'new-name', serialNumber: 'SN-1' },
      { id: 'by-host', hostname: 'print-01', serialNumber: 'To be filled by O.E.M.' },
      { id: 'twin-a', hostname: 'twin-a', serialNumber: 'SN-2' },
      { id: 'twin-b', hostname: 'twin-b', serialNumber: 'SN-2' },
      { id: 'left-over', hostname: 'old-box', serialNumber: 'SN-9' },
    ];
    const listed = [
      { hostname: 'OLD-NAME', serial: 'sn-1' },
      { hostname: 'PRINT-01', serial: 'Default string' },
      { hostname: 'twin', serial: 'SN-2' },
      { hostname: 'never-seen', serial: 'SN-7' },
    ];
    const { devices, counts } = reconcile(listed, enrolled);
    expect(devices.map((d) => [d.hostname, d.state, d.deviceId, d.candidates])).toEqual([
      ['OLD-NAME', 'enrolled', 'renamed', []],
      ['PRINT-01', 'enrolled', 'by-host', []],
      ['twin', 'ambiguous', null, ['twin-a', 'twin-b']],
      ['never-seen', 'missing', null, []],
      ['old-box', 'extra', 'left-over', []],
    ]);
    expect(counts).toEqual({ enrolled: 2, missing: 1, extra: 1, ambiguous: 1 });
  });
});
