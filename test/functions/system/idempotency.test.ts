import { beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '#shared/db/db.ts';
import { type Reply, useApi } from '#test/support/api.ts';
import { scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let device: { agentId: string; deviceId: string; token: string };

const contactsPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/contacts`;
const keyed = (key: string) => ({ 'idempotency-key': key });

const count = async (db: Db, sql: string, params: Record<string, string> = {}) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;

const contactsNamed = (name: string) => count(t.db.admin, 'contacts WHERE name = :name::text', { name });

/** Sends the same request twice with one key: the second is the first reply again, marked replayed. */
async function sendTwice(method: string, path: string, options: { token?: string; body?: unknown }, key: string) {
  const first = await t.api.request(method, path, { ...options, headers: keyed(key) });
  const second = await t.api.request(method, path, { ...options, headers: keyed(key) });
  return { first, second };
}

function expectReplay(first: Reply, second: Reply) {
  expect(second.status).toBe(first.status);
  expect(second.body).toEqual(first.body);
  expect(second.headers.get('idempotent-replayed')).toBe('true');
  expect(first.headers.get('idempotent-replayed')).toBeNull();
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Keyed');
  device = await enrollDevice(t.api, tenant, 'keyed-1');
});

describe('Idempotency-Key on a create', () => {
  it('the same key and body replays the first answer (status and body) and creates nothing more', async () => {
    const { first, second } = await sendTwice(
      'POST',
      contactsPath(tenant.orgId),
      { token: tenant.orgToken, body: { name: 'Replay Contact' } },
      'replay-1',
    );
    expect(first.status).toBe(201);
    expectReplay(first, second);
    expect(await contactsNamed('Replay Contact')).toBe(1);
    expect(
      await count(t.db.admin, "audit_logs WHERE action = 'contact.create' AND resource_id = :id::uuid", {
        id: first.body.id,
      }),
    ).toBe(1);
  });

  it('the same body with its keys in another order is the same request', async () => {
    const body = { name: 'Order Contact', title: 'CTO' };
    const first = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body,
      headers: keyed('order-1'),
    });
    const again = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      rawBody: '{ "title": "CTO",   "name": "Order Contact" }',
      headers: { ...keyed('order-1'), 'content-type': 'application/json' },
    });
    expectReplay(first, again);
    expect(await contactsNamed('Order Contact')).toBe(1);
  });

  it('the same key with another body is 422 IDEMPOTENCY_KEY_REUSED naming the key, and changes nothing', async () => {
    const first = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Reused Contact' },
      headers: keyed('reused-1'),
    });
    expect(first.status).toBe(201);
    const other = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Another Contact' },
      headers: keyed('reused-1'),
    });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(other.body.error.message).toContain('"reused-1"');
    expect(await contactsNamed('Another Contact')).toBe(0);
  });

  it('the same key and body on another path (another route or organization) is 422', async () => {
    const second = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Keyed Second' },
    });
    const body = { name: 'Path Contact' };
    const token = tenant.partnerToken;
    expect(
      (await t.api.request('POST', contactsPath(tenant.orgId), { token, body, headers: keyed('path-1') })).status,
    ).toBe(201);
    const elsewhere = await t.api.request('POST', contactsPath(second.body.id), {
      token,
      body,
      headers: keyed('path-1'),
    });
    expect(elsewhere.status).toBe(422);
    const group = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`, {
      token,
      body: { name: 'Path Contact', type: 'static' },
      headers: keyed('path-1'),
    });
    expect(group.status).toBe(422);
    expect(await contactsNamed('Path Contact')).toBe(1);
  });

  it("another caller's same key is a new request", async () => {
    const colleague = await orgUser(tenant.partnerId, tenant.orgId);
    const body = { name: 'Caller Contact' };
    const mine = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body,
      headers: keyed('caller-1'),
    });
    const theirs = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: colleague,
      body: { ...body, name: 'Caller Contact 2' },
      headers: keyed('caller-1'),
    });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  it('an Idempotency-Key that is empty, longer than 255 characters or not visible ASCII is 400 naming the header', async () => {
    for (const key of ['', 'k'.repeat(256), 'clé', 'tab\there']) {
      const reply = await t.api.request('POST', contactsPath(tenant.orgId), {
        token: tenant.orgToken,
        body: { name: 'Bad Key Contact' },
        headers: keyed(key),
      });
      expect(reply.status, JSON.stringify(key)).toBe(400);
      expect(reply.body.error.code).toBe('VALIDATION_FAILED');
      expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    }
    expect(await contactsNamed('Bad Key Contact')).toBe(0);
    const longest = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { name: 'Longest Key Contact' },
      headers: keyed(`a ${'k'.repeat(253)}`),
    });
    expect(longest.status).toBe(201);
  });

  it('a request refused before its change keeps no key: its retry runs again', async () => {
    const body = { name: 'Late Contact', siteId: '00000000-0000-4000-8000-000000000001' };
    const refused = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body,
      headers: keyed('late-1'),
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    const again = await t.api.request('POST', contactsPath(tenant.orgId), {
      token: tenant.orgToken,
      body,
      headers: keyed('late-1'),
    });
    expect(again.status).toBe(refused.status);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await count(t.db.admin, 'idempotency_keys')).toBeGreaterThan(0);
    expect(await contactsNamed('Late Contact')).toBe(0);
  });

  it('a key older than 24 hours is a new request', async () => {
    const body = { name: 'Old Key Contact' };
    const options = { token: tenant.orgToken, body, headers: keyed('old-1') };
    expect((await t.api.request('POST', contactsPath(tenant.orgId), options)).status).toBe(201);
    await t.db.admin.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`);
    const again = await t.api.request('POST', contactsPath(tenant.orgId), options);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(await contactsNamed('Old Key Contact')).toBe(2);
  });

  it('a retry while the first request with the key is in flight is 409, and the first then answers once', async () => {
    const path = contactsPath(tenant.orgId);
    const options = { token: tenant.orgToken, body: { name: 'Flight Contact' }, headers: keyed('flight-1') };
    // The contacts of an organization are written under its lock: holding it keeps the first request in its transaction.
    const { pending } = await t.db.admin.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('contacts:' || :orgId::text, 0))`, {
        orgId: tenant.orgId,
      });
      const pending = t.api.request('POST', path, options);
      await waitForLockWaiter(tx);
      const retry = await t.api.request('POST', path, options);
      expect(retry.status).toBe(409);
      expect(retry.body.error.code).toBe('IDEMPOTENCY_KEY_IN_FLIGHT');
      // Committing releases the lock: the first request goes on.
      return { pending };
    });
    const first = await pending;
    expect(first.status).toBe(201);
    const after = await t.api.request('POST', path, options);
    expectReplay(first, after);
    expect(await contactsNamed('Flight Contact')).toBe(1);
  });

  it('a reply that holds a secret is stored sealed, not readable in the database', async () => {
    const { first, second } = await sendTwice(
      'POST',
      `/api/v1/orgs/organizations/${tenant.orgId}/api-keys`,
      { token: tenant.orgToken, body: { name: 'Sealed key' } },
      'sealed-1',
    );
    expect(first.status).toBe(201);
    expectReplay(first, second);
    const { rows } = await t.db.admin.query<{ reply: string }>('SELECT reply FROM idempotency_keys');
    expect(rows.some((row) => row.reply?.includes(first.body.key))).toBe(false);
    expect(rows.some((row) => row.reply?.includes('Sealed key'))).toBe(false);
  });
});

/** Until some backend waits for an advisory lock (the request stopped where the test wants it). */
async function waitForLockWaiter(db: Db): Promise<void> {
  for (;;) {
    const waiting = await count(db, "pg_locks WHERE locktype = 'advisory' AND NOT granted");
    if (waiting > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('every family of creating routes honours the key', () => {
  interface Case {
    name: string;
    path: () => string;
    token: () => Promise<string> | string;
    body: () => unknown;
    /** Rows the request creates, counted. */
    rows: () => Promise<number>;
  }
  const unique = () => Math.random().toString(36).slice(2, 8);
  const cases: Case[] = [
    {
      name: 'partners',
      path: () => '/api/v1/partners',
      token: platformAdmin,
      body: () => ({ name: 'Keyed Partner' }),
      rows: () => count(t.db.admin, "partners WHERE name = 'Keyed Partner'"),
    },
    {
      name: 'organizations',
      path: () => '/api/v1/orgs/organizations',
      token: () => tenant.partnerToken,
      body: () => ({ name: 'Keyed Organization' }),
      rows: () => count(t.db.admin, "organizations WHERE name = 'Keyed Organization'"),
    },
    {
      name: 'sites',
      path: () => `/api/v1/orgs/organizations/${tenant.orgId}/sites`,
      token: () => tenant.orgToken,
      body: () => ({ name: 'Keyed Site' }),
      rows: () => count(t.db.admin, "sites WHERE name = 'Keyed Site'"),
    },
    {
      name: 'enrollment keys',
      path: () => `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`,
      token: () => tenant.orgToken,
      body: () => ({}),
      rows: () => count(t.db.admin, 'enrollment_keys'),
    },
    {
      name: 'API keys',
      path: () => `/api/v1/orgs/organizations/${tenant.orgId}/api-keys`,
      token: () => tenant.orgToken,
      body: () => ({ name: 'Keyed API key' }),
      rows: () => count(t.db.admin, "api_keys WHERE name = 'Keyed API key'"),
    },
    {
      name: 'device groups',
      path: () => `/api/v1/orgs/organizations/${tenant.orgId}/device-groups`,
      token: () => tenant.orgToken,
      body: () => ({ name: 'Keyed Group', type: 'static' }),
      rows: () => count(t.db.admin, "device_groups WHERE name = 'Keyed Group'"),
    },
    {
      name: 'contacts',
      path: () => contactsPath(tenant.orgId),
      token: () => tenant.orgToken,
      body: () => ({ name: 'Keyed Family Contact' }),
      rows: () => contactsNamed('Keyed Family Contact'),
    },
    {
      name: 'custom fields',
      path: () => '/api/v1/custom-fields',
      token: () => tenant.partnerToken,
      body: () => ({ name: 'Keyed field', key: 'keyed_field', type: 'text' }),
      rows: () => count(t.db.admin, "custom_field_definitions WHERE key = 'keyed_field'"),
    },
    {
      name: 'scripts',
      path: () => '/api/v1/scripts',
      token: () => tenant.partnerToken,
      body: () => ({ ...scriptBody({ name: 'Keyed script' }), orgId: tenant.orgId }),
      rows: () => count(t.db.admin, "scripts WHERE name = 'Keyed script'"),
    },
    {
      name: 'contact import commits',
      path: () => `${contactsPath(tenant.orgId)}/import`,
      token: () => tenant.orgToken,
      body: () => ({ rows: [{ sourceSystem: 'autotask', externalId: 'k-1', name: 'Keyed Imported' }] }),
      rows: () => contactsNamed('Keyed Imported'),
    },
    {
      name: 'PSA integrations',
      path: () => '/api/v1/integrations/psa',
      token: () => tenant.partnerToken,
      body: () => ({ name: 'Keyed PSA', url: 'https://psa.example.com/hook', secret: 'a-secret-of-sixteen+' }),
      rows: () => count(t.db.admin, "psa_integrations WHERE name = 'Keyed PSA'"),
    },
  ];

  it.each(cases)('$name: a resend replays the first answer and creates one', async (c) => {
    const token = await c.token();
    const before = await c.rows();
    const { first, second } = await sendTwice('POST', c.path(), { token, body: c.body() }, `family-${unique()}`);
    expect(first.status, JSON.stringify(first.body)).toBeGreaterThanOrEqual(200);
    expect(first.status).toBeLessThan(300);
    expectReplay(first, second);
    expect(await c.rows()).toBe(before + 1);
  });

  it('script runs: a resend replays the started run and starts no second one', async () => {
    const script = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ parameters: [] }), orgId: tenant.orgId },
    });
    expect(script.status).toBe(201);
    const { first, second } = await sendTwice(
      'POST',
      `/api/v1/scripts/${script.body.id}/runs`,
      { token: tenant.orgToken, body: { deviceIds: [device.deviceId] } },
      'run-1',
    );
    expect(first.status).toBe(202);
    expectReplay(first, second);
    expect(await count(t.db.admin, 'script_runs WHERE script_id = :id::uuid', { id: script.body.id })).toBe(1);
  });

  it('enrollment: the key is scoped by the enrollment key, and a resend enrolls one device', async () => {
    const enrollmentKey = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
      body: {},
    });
    const body = { enrollmentKey: enrollmentKey.body.key, hostname: 'keyed-enroll' };
    const { first, second } = await sendTwice('POST', '/api/v1/agents/enroll', { body }, 'enroll-1');
    expect(first.status).toBe(201);
    expectReplay(first, second);
    expect(await count(t.db.admin, "devices WHERE hostname = 'keyed-enroll'")).toBe(1);
    const otherKey = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
      token: tenant.orgToken,
      body: {},
    });
    const elsewhere = await t.api.request('POST', '/api/v1/agents/enroll', {
      body: { ...body, enrollmentKey: otherKey.body.key },
      headers: keyed('enroll-1'),
    });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.headers.get('idempotent-replayed')).toBeNull();
  });
});
