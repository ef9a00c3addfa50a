import { beforeAll, describe, expect, it } from 'vitest';
import { domainRoutes, routes } from '#functions/routes.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});

describe('request validation', () => {
  it('refuses a NUL character in a body field with 400 naming the field, and stores nothing', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'a\u0000b' },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([
      { path: 'body.name', message: 'Text must not contain the NUL character', code: 'invalid_format' },
    ]);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM organizations WHERE name LIKE 'a%b'`);
    expect(rows).toEqual([]);
  });

  it('refuses a NUL character in a query parameter with 400', async () => {
    const reply = await t.api.request('GET', '/api/v1/devices?search=a%00b', { token: tenant.orgToken });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0].path).toBe('query.search');
  });

  it("refuses a NUL character in an agent's enrollment with 400", async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
    });
    const reply = await t.api.request('POST', '/api/v1/agents/enroll', {
      body: { enrollmentKey: key.body.key, hostname: 'pc\u0000' },
    });
    expect(reply.status).toBe(400);
  });

  it('refuses a lone UTF-16 surrogate in a body field or field name with 400 naming where, and stores nothing', async () => {
    const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Lone \ud800 Corp' },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([
      {
        path: 'body.name',
        message: 'Text must be well-formed Unicode (no lone UTF-16 surrogate)',
        code: 'invalid_format',
      },
    ]);
    const key = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Fine Corp', 'x\udc00': 1 },
    });
    expect(key.status).toBe(400);
    expect(key.body.error.details).toEqual([expect.objectContaining({ path: 'body', code: 'invalid_format' })]);
    const { rows } = await t.db.admin.query(
      `SELECT 1 FROM organizations WHERE name LIKE 'Lone %' OR name = 'Fine Corp'`,
    );
    expect(rows).toEqual([]);
  });

  it("refuses a lone surrogate in an agent's enrollment with 400: no device, and no device.create row to lose", async () => {
    const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
    });
    const reply = await t.api.request('POST', '/api/v1/agents/enroll', {
      body: { enrollmentKey: key.body.key, hostname: 'evil\ud800host' },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details).toEqual([
      expect.objectContaining({ path: 'body.hostname', code: 'invalid_format' }),
    ]);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM devices WHERE hostname LIKE 'evil%'`);
    expect(rows).toEqual([]);
  });

  it('refuses a body nested more than 64 levels deep with 400 "nested too deeply", however deep', async () => {
    for (const depth of [65, 3_000, 100_000]) {
      const rawBody = `{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`;
      const reply = await t.api.request('POST', '/api/v1/orgs/organizations', {
        token: tenant.partnerToken,
        rawBody,
        headers: { 'content-type': 'application/json' },
      });
      expect(reply.status, `depth ${depth}`).toBe(400);
      expect(reply.body.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: 'Invalid body: nested too deeply',
        details: [expect.objectContaining({ code: 'too_deep' })],
      });
    }
    // 64 levels pass the walk and reach the schema, which names the field.
    const fits = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      rawBody: `{"name":${'['.repeat(63)}${']'.repeat(63)}}`,
    });
    expect(fits.status).toBe(400);
    expect(fits.body.error.details).toEqual([expect.objectContaining({ path: 'body.name', code: 'invalid_type' })]);
  });

  it('clamps any page size above the maximum, however large, to the maximum', async () => {
    for (const limit of ['101', '100000000000000000000', '9'.repeat(400)]) {
      const reply = await t.api.request('GET', `/api/v1/orgs/organizations?limit=${limit}`, {
        token: tenant.partnerToken,
      });
      expect(reply.status, limit).toBe(200);
      expect(reply.body.pagination.limit).toBe(100);
    }
    expect(
      (await t.api.request('GET', '/api/v1/orgs/organizations?limit=2.5', { token: tenant.partnerToken })).status,
    ).toBe(400);
    expect(
      (await t.api.request('GET', '/api/v1/orgs/organizations?limit=ten', { token: tenant.partnerToken })).status,
    ).toBe(400);
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
  it("is the merge of the folders' tables: each route declared once, each operation named once", () => {
    const declared = Object.values(domainRoutes).flatMap((table) => Object.keys(table));
    expect(new Set(declared).size).toBe(declared.length);
    expect(Object.keys(routes).sort()).toEqual(declared.sort());
    const operations = Object.values(routes).map((def) => def.operationId);
    expect(new Set(operations).size).toBe(operations.length);
  });
});
