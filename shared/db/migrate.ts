import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.ts';

export const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** The bootstrap file creates the roles and runs as the connecting administrator; all others run as logbook_owner. */
const bootstrap = '0001_roles.sql';

/** Any two processes migrating one database take turns on this lock. */
const migrationLock = 7_204_381_911;

export interface Migration {
  name: string;
  checksum: string;
  statements: string[];
}

/** The migrations in order. Statements are split on `--> statement-breakpoint` (the Data API runs one statement per call). */
export function loadMigrations(dir = migrationsDir): Migration[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => {
      const text = readFileSync(join(dir, name), 'utf8');
      return {
        name,
        checksum: createHash('sha256').update(text).digest('hex'),
        statements: text
          .split(/^--> statement-breakpoint\s*$/m)
          .map((s) => s.trim())
          .filter((s) => s.replace(/^--.*$/gm, '').trim() !== ''),
      };
    });
}

/**
 * Applies the pending migrations, each in its own transaction, and refuses to run
 * when an applied file has changed since (its checksum differs).
 */
export async function migrate(db: Db, options: { dir?: string; log?: (line: string) => void } = {}): Promise<string[]> {
  const migrations = loadMigrations(options.dir);
  await db.transaction(async (tx) => {
    await tx.query(`SELECT 1 FROM pg_advisory_xact_lock(${migrationLock})`);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name        text PRIMARY KEY,
      checksum    char(64) NOT NULL,
      applied_at  timestamptz NOT NULL DEFAULT now()
    )`);
  });
  const applied: string[] = [];
  for (const migration of migrations) {
    const ran = await db.transaction(async (tx) => {
      await tx.query(`SELECT 1 FROM pg_advisory_xact_lock(${migrationLock})`);
      const { rows } = await tx.query<{ checksum: string }>(
        'SELECT checksum FROM schema_migrations WHERE name = :name::text',
        {
          name: migration.name,
        },
      );
      if (rows[0]) {
        if (rows[0].checksum !== migration.checksum) {
          throw new Error(`migration ${migration.name} was changed after it was applied (checksum differs)`);
        }
        return false;
      }
      await tx.query('INSERT INTO schema_migrations (name, checksum) VALUES (:name::text, :checksum::text)', {
        name: migration.name,
        checksum: migration.checksum,
      });
      if (migration.name !== bootstrap) await tx.query('SET LOCAL ROLE logbook_owner');
      for (const statement of migration.statements) await tx.query(statement);
      return true;
    });
    if (ran) {
      applied.push(migration.name);
      options.log?.(`migrated ${migration.name}`);
    }
  }
  return applied;
}
