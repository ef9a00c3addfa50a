/**
 * Statement timeouts under the Data API, through the local Data API and the real SDK client: a
 * transaction's statements are bounded by SET LOCAL statement_timeout, a statement outside one by the API role's
 * default (set with its login), and every call is abandoned 2 s past the timeout; the API answers 503 UNAVAILABLE with
 * Retry-After, and the write it started never commits later.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAppDb } from '#shared/db/client.ts';
import { logEntry, submitLogs } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let local: LocalDataApi;
let tenant: Tenant;
const saved: Record<string, string | undefined> = {};

/** Runs `work`, and says how long it took. */
async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await work();
  return { result, ms: Date.now() - started };
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Data API Timeouts');
  // What grantRoleLogins sets for a statement timeout of 1 s, for this database only (other files share the server).
  await t.db.admin.query(`ALTER ROLE logbook_app IN DATABASE ${t.db.name} SET statement_timeout = 1000`);
  local = await startLocalDataApi(t.db);
  // The API through the local Data API, as in Lambda, with a statement timeout of 1 s.
  const env = { ...local.env, DB_STATEMENT_TIMEOUT_MS: '1000' };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  await closeAppDb();
});
afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await closeAppDb();
  await local?.close();
});

describe('statement timeouts under the Data API', () => {
  it("gives the API's role the statement timeout as its default with its login", async () => {
    const { rows } = await t.db.admin.query<{ config: string[] | null }>(
      "SELECT rolconfig AS config FROM pg_roles WHERE rolname = 'logbook_app'",
    );
    // Set by the test setup's grantRoleLogins, with the default DB_STATEMENT_TIMEOUT_MS.
    expect(rows[0]!.config).toContain('statement_timeout=20000');
    const db = local.db('app');
    expect((await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows).toEqual([
      { statement_timeout: '1s' },
    ]);
  });

  it("cancels a transaction's statement past the timeout (SET LOCAL), and nothing it wrote commits", async () => {
    const db = local.db('app', { statementTimeoutMs: 500 });
    const { result, ms } = await timed(() =>
      db
        .transaction(async (tx) => {
          expect((await tx.query('SHOW statement_timeout')).rows[0]).toEqual({
            statement_timeout: '500ms',
          });
          await tx.query('UPDATE organizations SET name = :name::text WHERE id = :id::uuid', {
            name: 'Never Committed',
            id: tenant.orgId,
          });
          await tx.query('SELECT pg_sleep(3)');
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        ),
    );
    expect(result).toMatchObject({ code: '57014' });
    expect(ms).toBeLessThan(2_000);
    const { rows } = await t.db.admin.query<{ name: string }>('SELECT name FROM organizations WHERE id = :id::uuid', {
      id: tenant.orgId,
    });
    expect(rows[0]!.name).not.toBe('Never Committed');
  });

  it("relies on the API role's default in its transactions: no SET of their own, a statement past it cancelled all the same", async () => {
    // The role's default here is 1 s (beforeAll), the executor's timeout too: its transactions issue no SET.
    const db = local.db('app', { statementTimeoutMs: 1_000, roleTimeout: true });
    const before = local.server.calls.length;
    const { result, ms } = await timed(() =>
      db
        .transaction(async (tx) => {
          expect((await tx.query('SHOW statement_timeout')).rows[0]).toEqual({ statement_timeout: '1s' });
          await tx.query('UPDATE organizations SET name = :name::text WHERE id = :id::uuid', {
            name: 'Never Committed Either',
            id: tenant.orgId,
          });
          await tx.query('SELECT pg_sleep(4)');
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        ),
    );
    expect(result).toMatchObject({ code: '57014' });
    expect(ms).toBeLessThan(3_000);
    // BeginTransaction, the three statements and the rollback: no set_config among them.
    const calls = local.server.calls.slice(before);
    expect(calls.map((call) => call.operation)).toEqual([
      'BeginTransaction',
      'Execute',
      'Execute',
      'Execute',
      'RollbackTransaction',
    ]);
    const { rows } = await t.db.admin.query<{ name: string }>('SELECT name FROM organizations WHERE id = :id::uuid', {
      id: tenant.orgId,
    });
    expect(rows[0]!.name).not.toBe('Never Committed Either');
  });

  it('abandons a call the database does not answer 2 s past the timeout, as a cancelled statement', async () => {
    // The superuser's sessions have no statement timeout: only the executor's own bound ends the wait.
    const db = local.db('admin', { statementTimeoutMs: 300 });
    const { result, ms } = await timed(() =>
      db.query('SELECT pg_sleep(5)').then(
        () => undefined,
        (error: unknown) => error,
      ),
    );
    expect(result).toMatchObject({ code: '57014' });
    expect(ms).toBeGreaterThanOrEqual(2_200);
    expect(ms).toBeLessThan(4_000);
  });

  it("bounds a keyed log upload, one statement outside a transaction, by the role's default: 503, nothing kept, the key free", async () => {
    const agent = await enrollDevice(t.api, tenant, 'timeout-logs');
    expect((await submitLogs(t.api, agent, [logEntry(0)])).status).toBe(201);
    const logs = [logEntry(1), logEntry(2)];
    const headers = { 'idempotency-key': 'upload-behind-a-lock' };
    // Another session holds the device's budget row: the upload's charge waits, as behind an overloaded server.
    const { result: reply, ms } = await timed(() =>
      t.db.admin.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM agent_ingest_usage WHERE device_id = :id::uuid FOR UPDATE', {
          id: agent.deviceId,
        });
        return submitLogs(t.api, agent, logs, { headers });
      }),
    );
    expect(reply.status).toBe(503);
    // Cancelled by the server at 1 s, not abandoned by the executor at 3 s: nothing of it runs on.
    expect(ms).toBeLessThan(2_500);
    const resent = await submitLogs(t.api, agent, logs, { headers });
    expect(resent).toMatchObject({ status: 201, body: { received: 2 } });
    expect(resent.headers.get('idempotent-replayed')).toBeNull();
    const { rows } = await t.db.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM agent_logs WHERE device_id = :id::uuid',
      { id: agent.deviceId },
    );
    expect(rows[0]!.n).toBe(3);
  });

  it('answers 503 UNAVAILABLE with Retry-After within the timeout, and the write never commits later', async () => {
    const before = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    expect(before.status).toBe(200);
    // Another session holds the organization's row: the rename waits, as behind a frozen or overloaded server.
    const { result: reply, ms } = await timed(() =>
      t.db.admin.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM organizations WHERE id = :id::uuid FOR UPDATE', { id: tenant.orgId });
        const answered = await t.api.request('PATCH', `/api/v1/orgs/organizations/${tenant.orgId}`, {
          token: tenant.partnerToken,
          body: { name: 'Renamed Behind A Lock' },
        });
        // Held a while longer: a statement still running would now commit.
        await new Promise((resolve) => setTimeout(resolve, 300));
        return answered;
      }),
    );
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).toBe('5');
    expect(reply.body.error.code).toBe('UNAVAILABLE');
    expect(ms).toBeLessThan(3_500);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    expect(after.status).toBe(200);
    expect(after.body.name).toBe(before.body.name);
  });
});
