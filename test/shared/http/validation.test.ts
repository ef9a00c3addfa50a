import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { readFileSync } from 'node:fs';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';
import { beforeAll } from 'vitest';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

describe('request validation', () => {
  it('refuses a NUL character in a body field with 400 naming the field, and stores nothing', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', { token: tenant.partnerToken, body: { name: 'a\u0000b' } });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([{ path: 'body.name', message: 'Text must not contain the NUL character', code: 'invalid_format' }]);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM organizations WHERE name LIKE 'a%b'`);
    expect(rows).toEqual([]);
  });

  it('refuses a NUL character in a query parameter with 400', async () => {
    const reply = await t.api.request('GET', '/api/v1/devices?search=a%00b', { token: tenant.orgToken });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('query.search');
  });

  it('refuses a NUL character in an agent\'s enrollment with 400', async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, { token: tenant.orgToken });
    const reply = await t.api.request('POST', '/api/v1/agents/enroll', { body: { enrollmentKey: key.body.key, hostname: 'pc\u0000' } });
    expect(reply.status).toBe(400);
  });

  it('clamps any page size above the maximum, however large, to the maximum', async () => {
    for (const limit of ['101', '100000000000000000000', '1e400']) {
      const reply = await t.api.request('GET', `/api/v1/orgs/organizations?limit=${limit}`, { token: tenant.partnerToken });
      expect(reply.status, limit).toBe(200);
      expect(reply.body.pagination.limit).toBe(100);
    }
    expect((await t.api.request('GET', '/api/v1/orgs/organizations?limit=2.5', { token: tenant.partnerToken })).status).toBe(400);
    expect((await t.api.request('GET', '/api/v1/orgs/organizations?limit=ten', { token: tenant.partnerToken })).status).toBe(400);
  });

  it('answers 503, not 500, when the database cannot be reached', async () => {
    const { closeAppDb } = await import('#shared/db/client.ts');
    const saved = process.env.APP_DATABASE_URL;
    process.env.APP_DATABASE_URL = 'postgres://logbook_app:x@127.0.0.1:9/none';
    await closeAppDb();
    try {
      const reply = await t.api.request('GET', '/api/v1/devices', { token: tenant.orgToken });
      expect(reply.status).toBe(503);
      expect(reply.body.error.code).toBe('UNAVAILABLE');
    } finally {
      process.env.APP_DATABASE_URL = saved;
      await closeAppDb();
    }
  });
});

describe('the route table', () => {
  it('names for every route a handler module that serves that same route', () => {
    for (const [key, def] of Object.entries(routes)) {
      const source = readFileSync(new URL(`../../../functions/${def.handler}.ts`, import.meta.url), 'utf8');
      expect(source, def.handler).toContain(`routes['${key}']`);
    }
  });
});
