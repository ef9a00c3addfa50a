/**
 * A change and its audit rows over a PostgreSQL server frozen (SIGSTOP) at the three moments that matter: as the
 * change's COMMIT is sent (the request answers 503, the change commits after the thaw), as the seal of its committed
 * audit intents is sent (between the change's commit and its reply), and as its intents are written (the change never
 * commits). Whatever the moment, no committed change is left without its audit row (one in each trail it belongs in:
 * a partner-wide change writes one per organization), none is doubled by retries or repeated sweeps, and a change that
 * did not commit has none. The server is a dedicated embedded PostgreSQL; the API reaches it through a freezing relay
 * (test/support/server-processes.ts). Short timeouts (1 s statements, 1 s connects) keep it quick.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import type { Reply } from '#test/support/api.ts';
import { useRelayedServer } from '#test/support/relayed-server.ts';
import { scriptBody } from '#test/support/scripts.ts';
import type { FreezeTrap } from '#test/support/server-processes.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useRelayedServer('audit-faults');
let tenant: Tenant;
let secondOrgId: string;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Frozen Trail');
  const second = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: 'Frozen Trail Second' },
  });
  secondOrgId = second.body.id;
});

/** Sends `request` with the server frozen when `trap` springs; thaws once the request is answered. */
async function frozenAt(trap: FreezeTrap, request: () => Promise<Reply>): Promise<Reply> {
  const sprung = t.relay.arm(trap);
  try {
    const pending = request();
    const frozeFirst = await Promise.race([sprung.then(() => true), pending.then(() => false)]);
    expect(frozeFirst, `the server froze on ${trap.on}`).toBe(true);
    return await pending;
  } finally {
    t.relay.thaw();
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
    await t.admin.query<{ id: string }>('SELECT id FROM contacts WHERE org_id = :orgId::uuid AND name = :name::text', {
      orgId: tenant.orgId,
      name,
    })
  ).rows.map((row) => row.id);

/** The audit rows of `action` naming `name`, by organization. */
const trailOf = async (action: string, name: string) =>
  (
    await t.admin.query<{ orgId: string }>(
      `SELECT org_id::text AS "orgId" FROM audit_logs WHERE action = :action::text AND resource_name = :name::text
        ORDER BY org_id`,
      { action, name },
    )
  ).rows.map((row) => row.orgId);

const waitingIntents = async () =>
  Number((await t.admin.query<{ count: string }>('SELECT count(*) AS count FROM audit_intents')).rows[0]!.count);

/** What the sweep does on the server's next start (or the queue worker's next run): every intent sealed, once. */
async function sweepTwiceAtOnce(): Promise<void> {
  await Promise.all([sealWaitingIntents(t.admin), sealWaitingIntents(t.admin)]);
  expect(await waitingIntents()).toBe(0);
}

const createContact = (name: string, key: string) => () =>
  t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
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
    expect(await verifyChain(t.admin, tenant.orgId)).toMatchObject({ ok: true });
  });

  it('frozen as the committed change is sealed: answered 201, audited once, in every trail of a partner-wide change', async () => {
    const name = 'Sealed After Thaw';
    const send = () =>
      t.api.request('POST', '/api/v1/scripts', {
        token: tenant.partnerToken,
        body: { ...scriptBody({ name, parameters: [] }), availability: 'partner' },
        headers: { 'idempotency-key': 'audit-frozen-seal' },
      });
    const first = await frozenAt({ on: 'logbook_audit_seal_intents' }, send);
    // The seal never fails the change: committed, and answered.
    expect(first.status).toBe(201);
    // The request gave up on its seal; the server, thawed, still runs it before it sees the connection closed.
    await t.relay.settled();
    await sweepTwiceAtOnce();
    expect(await once(send)).toMatchObject({ status: 201, body: first.body });
    await sweepTwiceAtOnce();
    // One row in the trail of each organization of the partner, whoever sealed it: the frozen seal after the thaw,
    // or the sweep.
    expect(await trailOf('script.create', name)).toEqual([tenant.orgId, secondOrgId].sort());
    for (const orgId of [tenant.orgId, secondOrgId])
      expect(await verifyChain(t.admin, orgId)).toMatchObject({ ok: true });
  });

  it('frozen as its audit intents are written: the change never commits, and has no audit row', async () => {
    const send = createContact('Never Committed', 'audit-frozen-intent');
    const first = await frozenAt({ on: 'audit_intents_add' }, send);
    expect(first.status).toBe(503);
    // Its backend, thawed, runs the statement, finds the connection closed, and rolls the transaction back.
    await t.relay.settled();
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
