/**
 * The migration that stores names in Unicode NFC, over data written before it: names are normalised, and a name whose
 * NFC form another unique name already holds keeps its stored form (never merged, and the migration does not fail).
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsDir } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { databaseName } from '#test/support/global-setup.ts';

const nfcMigration = '0064_anchor_org_sets_nfc_names.sql';
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

describe('normalising stored names to NFC', () => {
  it('normalises names, and leaves a name whose NFC form is taken as it was', async () => {
    const name = `${db.name}_nfc`;
    await db.admin.query(`CREATE DATABASE ${name}`);
    const fresh = createPgDb({ connectionString: databaseName(db.urls.admin, name), max: 1 });
    const before = mkdtempSync(join(tmpdir(), 'logbook-migrations-'));
    try {
      // The schema as it was before the migration.
      for (const file of readdirSync(migrationsDir).filter((file) => file < nfcMigration))
        cpSync(join(migrationsDir, file), join(before, file));
      await migrate(fresh, { dir: before });
      const { rows } = await fresh.query<{ orgId: string }>(
        `WITH p AS (INSERT INTO partners (name) VALUES ('P') RETURNING id)
         INSERT INTO organizations (partner_id, name) SELECT id, 'Cafe\u0301 Org' FROM p RETURNING id::text AS "orgId"`,
      );
      const orgId = rows[0]!.orgId;
      // NFC "Café" first, then NFD "CAFÉ" (the same unique name in lower case), and NFD "Thé" alone.
      for (const groupName of ['Caf\u00e9', 'CAFE\u0301', 'The\u0301'])
        await fresh.query(
          `INSERT INTO device_groups (org_id, name, type, created_at) VALUES (:orgId::uuid, :groupName, 'static', clock_timestamp())`,
          { orgId, groupName },
        );

      expect((await migrate(fresh))[0]).toBe(nfcMigration);

      const groups = await fresh.query<{ name: string }>('SELECT name FROM device_groups ORDER BY created_at');
      expect(groups.rows.map((row) => row.name)).toEqual(['Caf\u00e9', 'CAFE\u0301', 'Th\u00e9']);
      const orgs = await fresh.query<{ name: string }>('SELECT name FROM organizations');
      expect(orgs.rows).toEqual([{ name: 'Caf\u00e9 Org' }]);
    } finally {
      await fresh.close();
      rmSync(before, { recursive: true, force: true });
      await db.admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    }
  });
});
