/**
 * Database faults: a backend terminated mid-transaction rejects that transaction and never crashes the
 * process; during an outage the API answers 503 UNAVAILABLE with Retry-After, and it recovers by itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '#shared/db/db.ts';
import { connectionFailure, createPgDb } from '#shared/db/pg.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let db: Db & { pool: { totalCount: number } };
let tenant: Tenant;

beforeAll(async () => {
  // The API's connection is opened on its first request, with this statement timeout (shared/db/timeouts.ts).
  process.env.DB_STATEMENT_TIMEOUT_MS = '1000';
  db = createPgDb({ connectionString: t.db.urls.app, max: 2 });
  tenant = await createTenant(t.api, 'Faults');
});
afterAll(async () => {
  delete process.env.DB_STATEMENT_TIMEOUT_MS;
  await db?.close();
});

/**
 * Terminates every backend of the API's role (logbook_app) in this file's database, as a failover or `kill -9` of a
 * backend would; the other test files sharing the server keep theirs.
 */
const terminateAppBackends = () =>
  t.db.admin.query(
    `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
      WHERE usename = 'logbook_app' AND datname = current_database() AND pid <> pg_backend_pid()`,
  );

describe('a backend terminated mid-transaction', () => {
  it('rejects the transaction as a connection failure while it waits between statements, and the pool goes on', async () => {
    const transaction = db.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await t.db.admin.query('SELECT pg_terminate_backend(:pid::int)', { pid: rows[0]!.pid });
      // The connection's 'error' arrives while no statement runs: unheard, it would end the process.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tx.query('SELECT 1');
    });
    await expect(transaction).rejects.toMatchObject({ code: expect.stringMatching(/^(08|57P)/) });
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('rejects the transaction when the backend dies inside a statement', async () => {
    const transaction = db.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      setTimeout(() => void t.db.admin.query('SELECT pg_terminate_backend(:pid::int)', { pid: rows[0]!.pid }), 100);
      await tx.query('SELECT pg_sleep(2)');
    });
    await expect(transaction).rejects.toMatchObject({ code: expect.stringMatching(/^(08|57P)/) });
    expect((await db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('names a connection lost without a SQLSTATE a connection failure', async () => {
    const unreachable = createPgDb({ connectionString: 'postgres://nobody@127.0.0.1:1/none', connectTimeoutMs: 500 });
    try {
      await expect(unreachable.transaction(async () => undefined)).rejects.toMatchObject({
        code: expect.stringMatching(/^(ECONNREFUSED|08)/),
      });
    } finally {
      await unreachable.close();
    }
    expect(connectionFailure).toBe('08006');
  });
});

describe('the API while backends are terminated under load', () => {
  it('answers 200 or 503 UNAVAILABLE with Retry-After, never 500, and recovers by itself', async () => {
    const statuses: number[] = [];
    let stop = false;
    const load = Array.from({ length: 6 }, async () => {
      while (!stop) {
        const reply = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, {
          token: tenant.orgToken,
        });
        statuses.push(reply.status);
        if (reply.status === 503) {
          expect(reply.headers.get('retry-after')).toBe('5');
          expect(reply.body.error.code).toBe('UNAVAILABLE');
        }
      }
    });
    for (let round = 0; round < 5; round++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await terminateAppBackends();
    }
    stop = true;
    await Promise.all(load);
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((status) => status !== 200 && status !== 503)).toEqual([]);
    const after = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    expect(after.status).toBe(200);
  });
});

describe('a database that does not answer in time', () => {
  it('answers 503 UNAVAILABLE with Retry-After after the statement timeout, and the write never commits later', async () => {
    const before = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    // Another session holds the organization's row: the rename waits, as behind a frozen or overloaded server.
    const reply = await t.db.admin.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM organizations WHERE id = :id::uuid FOR UPDATE', { id: tenant.orgId });
      return t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
        token: tenant.partnerToken,
        body: { name: 'Renamed While Frozen' },
      });
    });
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.body.error.code).toBe('UNAVAILABLE');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    expect(after.body.name).toBe(before.body.name);
  });

  it('cancels a statement past the timeout on the server (57014)', async () => {
    const short = createPgDb({ connectionString: t.db.urls.app, max: 1, statementTimeoutMs: 200 });
    try {
      await expect(short.query('SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
      expect((await short.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await short.close();
    }
  });
});
