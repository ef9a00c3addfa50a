/**
 * A change and its audit rows over a PostgreSQL server frozen (SIGSTOP) at the three moments that matter: as the
 * change's COMMIT is sent (the request answers 503, the change commits after the thaw), as the seal of its committed
 * audit intents is sent (between the change's commit and its reply), and as its intents are written (the change never
 * commits). Whatever the moment, no committed change is left without its audit row (one in each trail it belongs in:
 * a partner-wide change writes one per organization), none is doubled by retries or repeated sweeps, and a change that
 * did not commit has none. The server is a dedicated embedded PostgreSQL; the API reaches it through a freezing relay
 * (test/support/server-processes.ts). Short timeouts (1 s statements, 1 s connects) keep it quick.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDatabase, roleUrls } from '#infra/local/database.ts';
import { freePort, type RunningPostgres, startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { type Api, type Reply, startApi } from '#test/support/api.ts';
import { scriptBody } from '#test/support/scripts.ts';
import { type FreezeTrap, type FreezingRelay, startFreezingRelay } from '#test/support/server-processes.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const dir = `.data/test-audit-faults-${process.pid}`;
let port: number;
let server: RunningPostgres;
let relay: FreezingRelay;
let admin: Db;
let api: Api;
let tenant: Tenant;
let secondOrgId: string;
const saved: Record<string, string | undefined> = {};

const adminUrl = () => `postgres://postgres:logbook-local@127.0.0.1:${port}/logbook_audit_faults`;

beforeAll(async () => {
  port = await freePort();
  server = await startEmbeddedPostgres({ dir, port, persistent: true });
  const bootstrap = createPgDb({ connectionString: server.url, max: 1 });
  await bootstrap.query('CREATE DATABASE logbook_audit_faults');
  await bootstrap.close();
  await prepareDatabase(adminUrl());
  relay = await startFreezingRelay(port, dir);
  const appUrl = new URL(roleUrls(adminUrl()).app);
  appUrl.port = String(relay.port);
  const env = { APP_DATABASE_URL: appUrl.toString(), DB_STATEMENT_TIMEOUT_MS: '1000', DB_CONNECT_TIMEOUT_MS: '1000' };
  for (const [name, value] of Object.entries(env)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
  await closeAppDb();
  admin = createPgDb({ connectionString: adminUrl(), max: 2, connectTimeoutMs: 1000 });
  api = await startApi();
  tenant = await createTenant(api, 'Frozen Trail');
  const second = await api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: 'Frozen Trail Second' },
  });
  secondOrgId = second.body.id;
}, 120_000);

afterAll(async () => {
  // Never left frozen, whatever failed.
  relay?.thaw();
  await api?.close();
  await closeAppDb();
  await admin?.close();
  relay?.close();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await server?.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `request` with the server frozen when `trap` springs; thaws once the request is answered. */
async function frozenAt(trap: FreezeTrap, request: () => Promise<Reply>): Promise<Reply> {
  const sprung = relay.arm(trap);
  try {
    const pending = request();
    const frozeFirst = await Promise.race([sprung.then(() => true), pending.then(() => false)]);
    expect(frozeFirst, `the server froze on ${trap.on}`).toBe(true);
    return await pending;
  } finally {
    relay.thaw();
  }
}

/** Sends `request` until the server answers other than 503 or 409 (a first request still committing). */
async function once(request: () => Promise<Reply>): Promise<Reply> {
  let reply = await request();
  while (reply.status === 503 || reply.status === 409) reply = await request();
  return reply;
}

const contactsNamed = async (name: string) =>
  (
    await admin.query<{ id: string }>('SELECT id FROM contacts WHERE org_id = :orgId::uuid AND name = :name::text', {
      orgId: tenant.orgId,
      name,
    })
  ).rows.map((row) => row.id);

/** The audit rows of `action` naming `name`, by organization. */
const trailOf = async (action: string, name: string) =>
  (
    await admin.query<{ orgId: string }>(
      `SELECT org_id::text AS "orgId" FROM audit_logs WHERE action = :action::text AND resource_name = :name::text
        ORDER BY org_id`,
      { action, name },
    )
  ).rows.map((row) => row.orgId);

const waitingIntents = async () =>
  Number((await admin.query<{ count: string }>('SELECT count(*) AS count FROM audit_intents')).rows[0]!.count);

/** What the sweep does on the server's next start (or the queue worker's next run): every intent sealed, once. */
async function sweepTwiceAtOnce(): Promise<void> {
  await Promise.all([sealWaitingIntents(admin), sealWaitingIntents(admin)]);
  expect(await waitingIntents()).toBe(0);
}

const createContact = (name: string, key: string) => () =>
  api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
    token: tenant.orgToken,
    body: { name },
    headers: { 'idempotency-key': key },
  });

describe('a change and its audit rows over a frozen server', () => {
  it('frozen as the COMMIT is sent: answered 503, committed after the thaw, audited once after retries and sweeps', async () => {
    const send = createContact('Committed Late', 'audit-frozen-commit');
    const first = await frozenAt({ after: 'audit_intents_add', on: 'COMMIT' }, send);
    expect(first.status).toBe(503);
    const retry = await once(send);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await contactsNamed('Committed Late')).toEqual([retry.body.id]);
    // The change committed with its intent; nobody saw the commit, so the sweep it armed seals it (run here at once).
    await sweepTwiceAtOnce();
    expect(await once(send)).toMatchObject({ status: 201, body: retry.body });
    expect(await trailOf('contact.create', 'Committed Late')).toEqual([tenant.orgId]);
    expect(await verifyChain(admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('frozen as the committed change is sealed: answered 201, audited once, in every trail of a partner-wide change', async () => {
    const name = 'Sealed After Thaw';
    const send = () =>
      api.request('POST', '/api/v1/scripts', {
        token: tenant.partnerToken,
        body: { ...scriptBody({ name, parameters: [] }), availability: 'partner' },
        headers: { 'idempotency-key': 'audit-frozen-seal' },
      });
    const first = await frozenAt({ on: 'logbook_audit_seal_intents' }, send);
    // The seal never fails the change: committed, and answered.
    expect(first.status).toBe(201);
    // The request gave up on its seal; the server, thawed, still runs it before it sees the connection closed.
    await relay.settled();
    await sweepTwiceAtOnce();
    expect(await once(send)).toMatchObject({ status: 201, body: first.body });
    await sweepTwiceAtOnce();
    // One row in the trail of each organization of the partner, whoever sealed it: the frozen seal after the thaw,
    // or the sweep.
    expect(await trailOf('script.create', name)).toEqual([tenant.orgId, secondOrgId].sort());
    for (const orgId of [tenant.orgId, secondOrgId])
      expect(await verifyChain(admin, orgId)).toMatchObject({ ok: true });
  });

  it('frozen as its audit intents are written: the change never commits, and has no audit row', async () => {
    const send = createContact('Never Committed', 'audit-frozen-intent');
    const first = await frozenAt({ on: 'audit_intents_add' }, send);
    expect(first.status).toBe(503);
    // Its backend, thawed, runs the statement, finds the connection closed, and rolls the transaction back.
    await relay.settled();
    await sweepTwiceAtOnce();
    expect(await contactsNamed('Never Committed')).toEqual([]);
    expect(await trailOf('contact.create', 'Never Committed')).toEqual([]);
    // The retry makes the change, audited once.
    const retry = await once(send);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    await sweepTwiceAtOnce();
    expect(await contactsNamed('Never Committed')).toEqual([retry.body.id]);
    expect(await trailOf('contact.create', 'Never Committed')).toEqual([tenant.orgId]);
  });
});
