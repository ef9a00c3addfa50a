/**
 * The local API over a PostgreSQL server that crashes or freezes, with counts: agents upload
 * logs with an Idempotency-Key and resend on 503 (as the simulated agent does), users create contacts without retrying.
 * The server is a dedicated embedded PostgreSQL this file starts, kills (-9, postmaster and backends) and restarts,
 * or stops (SIGSTOP) and continues. Short timeouts (1 s statements, 1 s connects) keep it quick.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FileAuditSpool, fileAuditSpool } from '#infra/local/audit-file-spool.ts';
import { prepareDatabase, roleUrls } from '#infra/local/database.ts';
import { type RunningPostgres, startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { useAuditSpool } from '#shared/audit/spool.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { selectDatabaseIdentity } from '#shared/db/identity.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { type Agent, logEntry, submitLogs } from '#test/support/agents.ts';
import { type Api, type Reply, startApi } from '#test/support/api.ts';
import { serverProcesses, signal } from '#test/support/server-processes.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const dir = `.data/test-faults-postgres-${process.pid}`;
const spoolDir = `${dir}-spool`;
let port: number;
let server: RunningPostgres;
let admin: Db;
let api: Api;
let tenant: Tenant;
let agents: Agent[];
let spool: FileAuditSpool;
const saved: Record<string, string | undefined> = {};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const adminUrl = () => `postgres://postgres:logbook-local@127.0.0.1:${port}/logbook_faults`;

beforeAll(async () => {
  server = await startEmbeddedPostgres({ dir, persistent: true });
  port = server.port;
  const bootstrap = createPgDb({ connectionString: server.url, max: 1 });
  await bootstrap.query('CREATE DATABASE logbook_faults');
  await bootstrap.close();
  await prepareDatabase(adminUrl());
  const env = {
    APP_DATABASE_URL: roleUrls(adminUrl()).app,
    DB_STATEMENT_TIMEOUT_MS: '1000',
    DB_CONNECT_TIMEOUT_MS: '1000',
  };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  await closeAppDb();
  admin = createPgDb({ connectionString: adminUrl(), max: 2, connectTimeoutMs: 1000 });
  spool = fileAuditSpool(spoolDir, await selectDatabaseIdentity(admin));
  useAuditSpool(spool);
  api = await startApi();
  tenant = await createTenant(api, 'Faults');
  agents = await Promise.all([1, 2, 3].map((n) => enrollDevice(api, tenant, `fault-${n}`)));
}, 120_000);

afterAll(async () => {
  // Never left frozen, whatever failed.
  if (server) signal(serverProcesses(dir), 'SIGCONT');
  useAuditSpool(undefined);
  await api?.close();
  await closeAppDb();
  await admin?.close();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
  rmSync(spoolDir, { recursive: true, force: true });
});

/** What every request of a load saw. */
interface Tally {
  statuses: number[];
  /** 503s without Retry-After, or without UNAVAILABLE. */
  bad503: number;
}

const record = (tally: Tally, reply: Reply) => {
  tally.statuses.push(reply.status);
  if (reply.status === 503 && (reply.headers.get('retry-after') !== '5' || reply.body?.error?.code !== 'UNAVAILABLE'))
    tally.bad503 += 1;
};

/** One agent upload of `count` unique entries, resent with the same Idempotency-Key until acknowledged. */
async function uploadUntilAcknowledged(tally: Tally, agent: Agent, batch: string, count: number): Promise<string[]> {
  const messages = Array.from({ length: count }, (_, i) => `${batch} entry ${i}`);
  const logs = messages.map((message, i) => logEntry(i, { message }));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const reply = await submitLogs(api, agent, logs, { headers: { 'idempotency-key': batch } });
    record(tally, reply);
    if (reply.status === 201) return messages;
    if (Date.now() > deadline) throw new Error(`${batch} never acknowledged: ${reply.status}`);
    await sleep(100);
  }
}

const storedMessages = async () =>
  (await admin.query<{ message: string }>('SELECT message FROM agent_logs ORDER BY message')).rows.map(
    (r) => r.message,
  );

/** Every acknowledged entry stored exactly once, and nothing stored that was not sent. */
async function expectStoredOnce(acknowledged: string[], prefix: string) {
  const stored = (await storedMessages()).filter((message) => message.startsWith(prefix));
  expect(stored.length).toBe(new Set(stored).size);
  expect(new Set(stored)).toEqual(new Set(acknowledged));
}

/** Waits until the API answers again (it must recover by itself). */
async function recovered(): Promise<number> {
  const started = Date.now();
  for (;;) {
    const reply = await api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
    if (reply.status === 200) return Date.now() - started;
    if (Date.now() - started > 30_000) throw new Error(`no recovery: ${reply.status}`);
    await sleep(200);
  }
}

describe('the database server killed and restarted under load', () => {
  it('answers 2xx or 503 with Retry-After, stores every acknowledged row once, and recovers by itself', async () => {
    const tally: Tally = { statuses: [], bad503: 0 };
    const acknowledged: string[] = [];
    const contacts: { name: string; status: number }[] = [];
    let stop = false;
    const agentLoads = agents.map(async (agent, a) => {
      for (let batch = 0; !stop; batch++)
        acknowledged.push(...(await uploadUntilAcknowledged(tally, agent, `restart a${a} b${batch}`, 5)));
    });
    const userLoad = (async () => {
      for (let n = 0; !stop; n++) {
        const name = `Restart Contact ${n}`;
        const reply = await api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
          token: tenant.orgToken,
          body: { name },
        });
        record(tally, reply);
        contacts.push({ name, status: reply.status });
        if (reply.status !== 201) await sleep(100);
      }
    })();
    const createdSoFar = () => contacts.filter((contact) => contact.status === 201).length;
    // Polled until the load has done what the test counts on, however slow a loaded machine makes it.
    const until = async (check: () => boolean) => {
      while (!check()) await sleep(50);
    };
    await until(() => createdSoFar() >= 3 && acknowledged.length >= 10);
    // A crash: the postmaster and every backend killed at once, then the server started again (crash recovery).
    signal(serverProcesses(dir), 'SIGKILL');
    await sleep(1_000);
    server = await startEmbeddedPostgres({ dir, port, persistent: true });
    const recoveredAfterMs = await recovered();
    const createdBefore = createdSoFar();
    await until(() => createdSoFar() >= createdBefore + 3 && acknowledged.length > 30);
    stop = true;
    await Promise.all([...agentLoads, userLoad]);

    expect(tally.statuses.filter((status) => status !== 201 && status !== 503)).toEqual([]);
    expect(tally.statuses.filter((status) => status === 503).length).toBeGreaterThan(0);
    expect(tally.bad503).toBe(0);
    expect(recoveredAfterMs).toBeLessThan(10_000);
    expect(acknowledged.length).toBeGreaterThan(30);
    await expectStoredOnce(acknowledged, 'restart ');
    // A contact acknowledged is stored once; one whose reply was lost may be stored (the user did not resend it).
    const storedContacts = (
      await admin.query<{ name: string }>("SELECT name FROM contacts WHERE name LIKE 'Restart Contact %'")
    ).rows.map((r) => r.name);
    expect(storedContacts.length).toBe(new Set(storedContacts).size);
    const created = contacts.filter((contact) => contact.status === 201).map((contact) => contact.name);
    expect(created.length).toBeGreaterThan(5);
    expect(storedContacts).toEqual(expect.arrayContaining(created));
    expect(contacts.length).toBeGreaterThanOrEqual(storedContacts.length);
    // Every acknowledged contact has its audit row: sealed by its request, or, when the server died between the
    // change's commit and the seal, by the sweep the failed seal armed (run here at once).
    const app = createPgDb({ connectionString: roleUrls(adminUrl()).app, max: 1 });
    try {
      await spool.replay(app);
      await sealWaitingIntents(app);
    } finally {
      await app.close();
    }
    const unaudited = await admin.query<{ name: string }>(
      `SELECT c.name FROM contacts c WHERE c.name LIKE 'Restart Contact %'
          AND NOT EXISTS (SELECT 1 FROM audit_logs a WHERE a.org_id = c.org_id AND a.resource_id = c.id)`,
    );
    expect(unaudited.rows.map((r) => r.name).filter((name) => created.includes(name))).toEqual([]);
    expect(await verifyChain(admin, tenant.orgId)).toMatchObject({ ok: true });
  }, 60_000);
});

describe('the database server frozen longer than the statement timeout', () => {
  it('answers 503 UNAVAILABLE with Retry-After within the timeout, stores a resent upload once, and recovers after SIGCONT', async () => {
    const tally: Tally = { statuses: [], bad503: 0 };
    const frozen = serverProcesses(dir);
    signal(frozen, 'SIGSTOP');
    let during: { reply: Reply; ms: number }[];
    // Each agent's upload, the same body on every resend.
    const uploads = agents.map((_, a) =>
      Array.from({ length: 3 }, (_, i) => logEntry(i, { message: `frozen a${a} entry ${i}` })),
    );
    const logsOf = (a: number) => uploads[a]!;
    try {
      during = await Promise.all(
        agents.map(async (agent, a) => {
          const started = Date.now();
          const reply = await submitLogs(api, agent, logsOf(a), { headers: { 'idempotency-key': `frozen a${a}` } });
          return { reply, ms: Date.now() - started };
        }),
      );
      const read = Date.now();
      const get = await api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token: tenant.orgToken });
      during.push({ reply: get, ms: Date.now() - read });
      // Frozen a while longer than the statement timeout and the client's bound (1 s + 2 s).
      await sleep(1_000);
    } finally {
      signal(frozen, 'SIGCONT');
    }
    for (const { reply, ms } of during) {
      record(tally, reply);
      expect(reply.status).toBe(503);
      // The statement timeout (1 s), the client's 2 s beyond it, and a connect timeout (1 s) at most.
      expect(ms).toBeLessThan(5_000);
    }
    expect(tally.bad503).toBe(0);
    expect(await recovered()).toBeLessThan(10_000);
    // Nothing of the frozen uploads committed later.
    await sleep(500);
    expect((await storedMessages()).filter((message) => message.startsWith('frozen '))).toEqual([]);
    // Each agent resends with the same key: stored once, and a second resend stores nothing more.
    const acknowledged: string[] = [];
    for (const [a, agent] of agents.entries()) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const reply = await submitLogs(api, agent, logsOf(a), { headers: { 'idempotency-key': `frozen a${a}` } });
        expect(reply.status).toBe(201);
        expect(reply.body).toEqual({ received: 3 });
      }
      acknowledged.push(...logsOf(a).map((entry) => entry.message as string));
    }
    await expectStoredOnce(acknowledged, 'frozen ');
  }, 60_000);
});
