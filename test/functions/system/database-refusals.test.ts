/**
 * What the database refuses is answered for what it is, never a 500: a write its role may not make (503 with
 * Retry-After: the operator restores the grant), a missing parent (404 naming the field), a row still referenced
 * (409), a rule of a table (400 naming the rule).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { toErrorReply } from '#shared/http/error-envelope.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let root: string;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Refusals');
  root = await platformAdmin();
});

/** The reply the error envelope gives to what PostgreSQL raised for `sql`. */
async function replyTo(sql: string, before?: string) {
  const error = await t.db.admin
    .transaction(async (tx) => {
      if (before) await tx.query(before);
      await tx.query(sql);
    })
    .then(
      () => undefined,
      (refused: unknown) => refused,
    );
  expect(error).toBeDefined();
  const reply = toErrorReply(error) as { statusCode: number; headers: Record<string, string>; body: string };
  return { status: reply.statusCode, headers: reply.headers, body: JSON.parse(reply.body) };
}

describe('what the database refuses', () => {
  it('an audit event whose insert the database refuses its role is 503 with Retry-After, and stored once allowed', async () => {
    const event = {
      orgId: tenant.orgId,
      actorType: 'system',
      actorId: randomUUID(),
      action: 'policy.refusal-test',
      details: { scenario: 'revoked' },
    };
    await t.db.admin.query('REVOKE INSERT ON audit_entries FROM logbook_app');
    try {
      const refused = await t.api.request('POST', '/api/v1/audit-logs/events', {
        token: root,
        body: { events: [event] },
      });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('UNAVAILABLE');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await t.db.admin.query('GRANT INSERT ON audit_entries TO logbook_app');
    }
    const stored = await t.db.admin.query(
      "SELECT count(*)::int AS n FROM audit_logs WHERE action = 'policy.refusal-test'",
    );
    expect(stored.rows[0]!.n).toBe(0);
    const retried = await t.api.request('POST', '/api/v1/audit-logs/events', {
      token: root,
      body: { events: [event] },
    });
    expect(retried.status).toBe(201);
  });

  it('a partner-wide alert binding of a partner that does not exist is 404 naming partnerId', async () => {
    const reply = await t.api.request('PUT', `/api/v1/partners/${randomUUID()}/alert-binding`, {
      token: root,
      body: { target: 'tickets' },
    });
    expect(reply.status).toBe(404);
    expect(reply.body.error.code).toBe('NOT_FOUND');
    expect(reply.body.error.details[0].path).toBe('partnerId');
  });

  it('clearing a contact externalId that its sourceSystem needs is 400 naming the rule and the field', async () => {
    const created = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
      token: tenant.orgToken,
      body: { name: 'Keyed', sourceSystem: 'ninjaone', externalId: 'c-9' },
    });
    expect(created.status).toBe(201);
    const reply = await t.api.request('PATCH', `/api/v1/contacts/${created.body.id}`, {
      token: tenant.orgToken,
      body: { externalId: null },
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toBe('sourceSystem and externalId are set or cleared together');
    expect(reply.body.error.details[0].path).toBe('body.externalId');
    const kept = await t.api.request('GET', `/api/v1/contacts/${created.body.id}`, { token: tenant.orgToken });
    expect(kept.body).toMatchObject({ sourceSystem: 'ninjaone', externalId: 'c-9' });
  });

  it('maps each class PostgreSQL raises: check 400 naming the rule, missing parent 404 naming the field, referenced 409', async () => {
    await t.db.admin.query(`CREATE TABLE refusal_parents (id uuid PRIMARY KEY);
      CREATE TABLE refusal_children (parent_id uuid REFERENCES refusal_parents (id),
        size int CONSTRAINT refusal_children_size_positive CHECK (size > 0))`);
    const parent = randomUUID();
    await t.db.admin.query(`INSERT INTO refusal_parents VALUES ('${parent}')`);
    await t.db.admin.query(`INSERT INTO refusal_children VALUES ('${parent}', 1)`);

    const check = await replyTo(`INSERT INTO refusal_children VALUES ('${parent}', 0)`);
    expect(check.status).toBe(400);
    expect(check.body.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'Request breaks the rule refusal_children_size_positive',
    });

    const missing = await replyTo(`INSERT INTO refusal_children VALUES ('${randomUUID()}', 1)`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.details[0]).toMatchObject({ path: 'parentId', code: 'foreign_key' });

    const referenced = await replyTo(`DELETE FROM refusal_parents WHERE id = '${parent}'`);
    expect(referenced.status).toBe(409);
    expect(referenced.body.error.code).toBe('CONFLICT');

    const busy = await replyTo('SELECT pg_sleep(1)', "SET LOCAL statement_timeout = '10ms'");
    expect(busy.status).toBe(503);
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
  });
});
