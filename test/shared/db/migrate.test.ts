import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate, migrationsDir } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { withCredentials } from '#shared/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { databaseName } from '#test/support/global-setup.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.close());

describe('migrations', () => {
  it('split every file on statement breakpoints into non-empty statements', () => {
    const migrations = loadMigrations();
    expect(migrations.map((m) => m.name)).toEqual([...migrations.map((m) => m.name)].sort());
    for (const m of migrations) {
      expect(m.statements.length).toBeGreaterThan(0);
      for (const statement of m.statements) expect(statement).not.toContain('statement-breakpoint');
    }
  });

  it('record each applied file and apply nothing twice', async () => {
    const { rows } = await db.admin.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
    expect(rows.map((r) => r.name)).toEqual(loadMigrations().map((m) => m.name));
    expect(await migrate(db.admin)).toEqual([]);
  });

  it('refuse to run when an applied file was changed afterwards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logbook-migrations-'));
    cpSync(migrationsDir, dir, { recursive: true });
    const first = loadMigrations(dir)[1]!;
    writeFileSync(join(dir, first.name), `${first.statements.join('\n--> statement-breakpoint\n')}\n-- edited\n`);
    await expect(migrate(db.admin, { dir })).rejects.toThrow(/was changed after it was applied/);
  });

  it('let two migrators race on a fresh database without failing', async () => {
    const name = `${db.name}_race`;
    await db.admin.query(`CREATE DATABASE ${name}`);
    const url = databaseName(db.urls.admin, name);
    const a = createPgDb({ connectionString: url, max: 1 });
    const b = createPgDb({ connectionString: url, max: 1 });
    try {
      const [ranA, ranB] = await Promise.all([migrate(a), migrate(b)]);
      expect([...ranA, ...ranB].sort()).toEqual(loadMigrations().map((m) => m.name));
    } finally {
      await a.close();
      await b.close();
      await db.admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    }
  });

  it('make logbook_owner the owner of every table', async () => {
    const { rows } = await db.admin.query<{ tablename: string; tableowner: string }>(
      `SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toEqual({ tablename: row.tablename, tableowner: 'logbook_owner' });
  });

  it("run for an administrator that is no superuser but created the roles, as Aurora's master user", async () => {
    const role = `${db.name}_createrole`;
    const password = randomBytes(16).toString('hex');
    await db.admin.query(`CREATE ROLE ${role} LOGIN CREATEROLE PASSWORD '${password}'`);
    await db.admin.query(`CREATE DATABASE ${role} OWNER ${role}`);
    const version = (await db.admin.query<{ v: number }>(`SELECT current_setting('server_version_num')::int AS v`))
      .rows[0]!.v;
    // The roles exist cluster-wide already; grant what creating them would have given this administrator:
    // since PostgreSQL 16 ADMIN without SET or INHERIT, before it nothing (CREATEROLE alone may grant any role).
    if (version >= 160000)
      await db.admin.query(
        `GRANT logbook_owner, logbook_app, logbook_audit_admin TO ${role} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE`,
      );
    const administrator = createPgDb({
      connectionString: withCredentials(databaseName(db.urls.admin, role), role, password),
      max: 1,
    });
    try {
      expect(await migrate(administrator)).toEqual(loadMigrations().map((m) => m.name));
      const { rows } = await administrator.query<{ tableowner: string }>(
        `SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('organizations', 'devices', 'api_keys')`,
      );
      expect(rows).toEqual([{ tableowner: 'logbook_owner' }]);
    } finally {
      await administrator.close();
      await db.admin.query(`DROP DATABASE ${role} WITH (FORCE)`);
      await db.admin.query(`DROP ROLE ${role}`);
    }
  });
});
