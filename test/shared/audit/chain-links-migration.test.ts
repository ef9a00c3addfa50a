import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { verifyChain } from '#shared/audit/verify.ts';
import { migrate, migrationsDir } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { databaseName } from '#test/support/global-setup.ts';
import { readChain } from './audit-rows.ts';

/** The migrations before the audit trail became entries and links (0060_audit_chain_links.sql). */
function migrationsBefore(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'logbook-migrations-'));
  for (const file of readdirSync(migrationsDir).filter((file) => file < name))
    cpSync(join(migrationsDir, file), join(dir, file));
  return dir;
}

describe('migrating an existing trail into entries and links (0060_audit_chain_links.sql)', () => {
  it('keeps every row, seq, checksum and link, so the chains verify, and the next rows continue them', async () => {
    const server = createPgDb({ connectionString: inject('serverUrl'), max: 1 });
    const name = `${inject('databasePrefix')}_links_${randomBytes(4).toString('hex')}`;
    const before = migrationsBefore('0060_');
    try {
      await server.query(`CREATE DATABASE ${name}`);
      const admin = createPgDb({ connectionString: databaseName(inject('serverUrl'), name), max: 1 });
      try {
        await migrate(admin, { dir: before });
        const [a, b] = [randomUUID(), randomUUID()].sort() as [string, string];
        // Written by the sealing trigger of 0003: rows of two organizations, several in one instant.
        const insert = (orgId: string, count: number) =>
          admin.query(
            `INSERT INTO audit_logs (org_id, actor_type, actor_id, action, resource_name, details)
             SELECT :orgId::uuid, 'user', gen_random_uuid(), 'device.update', 'WS-' || g, jsonb_build_object('n', g)
               FROM generate_series(1, :count::int) g ORDER BY g`,
            { orgId, count },
          );
        await insert(a, 3);
        await insert(b, 2);
        await insert(a, 2);
        const { rows: old } = await admin.query<{ id: string; orgId: string; seq: number; checksum: string }>(
          `SELECT id::text AS id, org_id::text AS "orgId", seq, checksum, prev_checksum AS "prevChecksum", resource_name AS "resourceName"
             FROM audit_logs ORDER BY org_id, seq`,
        );

        await migrate(admin);

        const { rows: moved } = await admin.query<{ id: string; orgId: string; seq: number; checksum: string }>(
          `SELECT id::text AS id, org_id::text AS "orgId", seq, checksum, prev_checksum AS "prevChecksum", resource_name AS "resourceName"
             FROM audit_logs ORDER BY org_id, seq`,
        );
        expect(moved).toEqual(old);
        expect(await verifyChain(admin, a)).toEqual({ ok: true, checked: 5 });
        expect(await verifyChain(admin, b)).toEqual({ ok: true, checked: 2 });
        // Rows of one instant keep their chain order newest first: pos follows seq.
        const { rows: order } = await admin.query<{ seq: number }>(
          'SELECT seq FROM audit_logs WHERE org_id = :a::uuid ORDER BY timestamp DESC, pos DESC',
          { a },
        );
        expect(order.map((row) => row.seq)).toEqual([5, 4, 3, 2, 1]);

        await admin.query(
          `INSERT INTO audit_entries (org_id, actor_type, actor_id, action) VALUES (:a::uuid, 'user', gen_random_uuid(), 'device.delete')`,
          { a },
        );
        const chain = await readChain(admin, a);
        expect(chain.at(-1)).toMatchObject({ seq: 6, prevChecksum: chain.at(-2)!.checksum, action: 'device.delete' });
        expect(await verifyChain(admin, a)).toEqual({ ok: true, checked: 6 });
      } finally {
        await admin.close();
      }
    } finally {
      rmSync(before, { recursive: true, force: true });
      await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.close();
    }
  });
});
