/**
 * A create whose client gave up and retried with the same Idempotency-Key, over a PostgreSQL server frozen (SIGSTOP)
 * just as the request's COMMIT is on its way: the request answers 503 within its timeout, its change commits after
 * the thaw, and the retry must replay that change's reply, never create a second one. The server is a dedicated
 * embedded PostgreSQL this file starts; the API reaches it through a TCP relay of the test's own, which freezes the
 * server at the moment the transaction that claimed the key sends COMMIT. Short timeouts (1 s statements, 1 s
 * connects) keep it quick.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from '#test/support/api.ts';
import { useRelayedServer } from '#test/support/relayed-server.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useRelayedServer('idempotency-faults');
let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Frozen Keys');
});

/** The ids of the rows a create made, by name: a contact (created in a transaction) or a site (one statement). */
const rowsNamed = async (table: 'contacts' | 'sites', name: string) =>
  (
    await t.admin.query<{ id: string }>(`SELECT id FROM ${table} WHERE org_id = :orgId::uuid AND name = :name::text`, {
      orgId: tenant.orgId,
      name,
    })
  ).rows.map((row) => row.id);

describe('a keyed create over a server frozen as its COMMIT is sent', () => {
  it.each([
    { table: 'contacts' as const, name: 'Frozen Contact' },
    { table: 'sites' as const, name: 'Frozen Site' },
  ])(
    '$table: answers 503, commits after the thaw, and the retry with the same key replays it: one row',
    async ({ table, name }) => {
      const send = () =>
        t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/${table}`, {
          token: tenant.orgToken,
          body: { name },
          headers: { 'idempotency-key': `frozen-commit-${table}` },
        });
      // The transaction that claimed the key (its advisory lock) freezes the server as it sends COMMIT.
      const sprung = t.relay.arm({ after: 'pg_try_advisory_xact_lock(2,', on: 'COMMIT' });
      let first: Reply;
      let during: Reply;
      try {
        const pending = send();
        const frozeFirst = await Promise.race([sprung.then(() => true), pending.then(() => false)]);
        expect(frozeFirst, 'the server froze as the transaction that claimed the key sent COMMIT').toBe(true);
        first = await pending;
        // The client gave up; it retries while the server is still frozen.
        during = await send();
      } finally {
        t.relay.thaw();
      }
      expect(first.status).toBe(503);
      expect(first.body.error.code).toBe('UNAVAILABLE');
      // The first request's commit is still on its way: the retry is told to come back (409 in flight, or 503 when it
      // had to ask the frozen server first); either way it created nothing.
      expect([409, 503]).toContain(during.status);

      // After the thaw: retried until the server answers other than 503 or 409 (the first still committing).
      let retry = await send();
      const deadline = Date.now() + 30_000;
      while ((retry.status === 503 || retry.status === 409) && Date.now() < deadline) retry = await send();
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      // The change the first request made, committed after it was answered, and nothing more.
      expect(await rowsNamed(table, name)).toEqual([retry.body.id]);
      expect(retry.body).toMatchObject({ name });
      const again = await send();
      expect(again.body).toEqual(retry.body);
      expect(await rowsNamed(table, name)).toHaveLength(1);
    },
    90_000,
  );
});
