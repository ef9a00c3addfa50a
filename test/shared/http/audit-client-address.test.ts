import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Forwarded');
  process.env.TRUST_PROXY_HEADERS = 'true';
});
afterAll(() => {
  delete process.env.TRUST_PROXY_HEADERS;
});

const lastUpdate = (orgId: string) =>
  t.db.admin
    .query<{ ipAddress: string | null; details: Record<string, unknown> }>(
      `SELECT ip_address AS "ipAddress", details FROM audit_logs
        WHERE org_id = :orgId::uuid AND action = 'organization.update' ORDER BY seq DESC LIMIT 1`,
      { orgId },
    )
    .then((r) => r.rows[0]);

describe("a route's audit row and the client address a proxy claimed", () => {
  it('keeps a non-IP first X-Forwarded-For entry in details.rawIpAddress, the IP column null', async () => {
    const reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
      token: tenant.partnerToken,
      body: { name: 'Forwarded Renamed' },
      headers: { 'x-forwarded-for': 'unknown, 198.51.100.7' },
    });
    expect(reply.status).toBe(200);
    const row = await lastUpdate(tenant.orgId);
    expect(row?.ipAddress).toBeNull();
    expect(row?.details.rawIpAddress).toBe('unknown');
  });

  it('stores an IP first entry as the IP, with no rawIpAddress', async () => {
    await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
      token: tenant.partnerToken,
      body: { name: 'Forwarded Again' },
      headers: { 'x-forwarded-for': '198.51.100.8, 10.0.0.1' },
    });
    const row = await lastUpdate(tenant.orgId);
    expect(row?.ipAddress).toBe('198.51.100.8');
    expect(row?.details.rawIpAddress).toBeUndefined();
  });
});
