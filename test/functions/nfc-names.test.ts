/**
 * Names that must be unique compare in Unicode NFC, and are stored in it: "Café" typed precomposed (NFC, U+00E9) and
 * decomposed (NFD, e + U+0301) is one name.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { scriptBody } from '#test/support/scripts.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
const composed = 'Caf\u00e9';
const decomposed = 'Cafe\u0301';

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Unicode');
});

describe('names in Unicode NFC', () => {
  it('the two forms differ as bytes', () => {
    expect(composed).not.toBe(decomposed);
    expect(decomposed.normalize('NFC')).toBe(composed);
  });

  it('a device group named in NFD after one named in NFC is the same name: 409, and the stored name is NFC', async () => {
    const path = `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`;
    const first = await t.api.request('POST', path, {
      token: tenant.orgToken,
      body: { name: decomposed, type: 'static' },
    });
    expect(first.status).toBe(201);
    expect(first.body.name).toBe(composed);
    const second = await t.api.request('POST', path, {
      token: tenant.orgToken,
      body: { name: composed, type: 'static' },
    });
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('CONFLICT');
    const { rows } = await t.db.admin.query<{ name: string }>(
      'SELECT name FROM device_groups WHERE org_id = :orgId::uuid',
      { orgId: tenant.orgId },
    );
    expect(rows).toEqual([{ name: composed }]);
  });

  it('a script named in NFD after one named in NFC is the same name: 409, and only the first is stored', async () => {
    const first = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: `${composed} cleanup` }), orgId: tenant.orgId },
    });
    expect(first.status).toBe(201);
    const second = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: `${decomposed} cleanup` }), orgId: tenant.orgId },
    });
    expect(second.status).toBe(409);
    const { rows } = await t.db.admin.query<{ name: string }>(
      `SELECT name FROM scripts WHERE org_id = :orgId::uuid AND name LIKE 'Caf%'`,
      { orgId: tenant.orgId },
    );
    expect(rows).toEqual([{ name: `${composed} cleanup` }]);
  });

  it('an organization renamed in NFD is stored in NFC', async () => {
    const reply = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
      token: tenant.partnerToken,
      body: { name: `${decomposed} Unicode` },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.name).toBe(`${composed} Unicode`);
  });
});
