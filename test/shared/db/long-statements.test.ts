/**
 * Statements that outlive a Data API call: DDL on a large audit table can take longer than the call's
 * timeout (45 s in AWS; 300 ms here). With continueAfterTimeout the statement runs on and the executor polls its
 * session until it ends; without it the statement is cancelled. Through the local Data API and the real SDK client.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '#shared/db/migrate.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

let test: TestDatabase;
let local: LocalDataApi;

beforeAll(async () => {
  test = await createTestDatabase();
  local = await startLocalDataApi(test, { callTimeoutMs: 300 });
});

afterAll(async () => {
  await local?.close();
  await test?.close();
});

/** One statement that takes about a second, then creates `table`. */
const slowDdl = (table: string) => `DO $$ BEGIN PERFORM pg_sleep(1); CREATE TABLE ${table} (id int); END $$`;

const exists = async (table: string) =>
  (await test.admin.query<{ found: boolean }>('SELECT to_regclass(:table::text) IS NOT NULL AS found', { table }))
    .rows[0]!.found;

describe('a statement longer than the Data API call', () => {
  it('runs on with continueAfterTimeout, and the transaction commits once it has ended', async () => {
    const db = local.db('admin', { continueAfterTimeout: true, pollMs: 50 });
    await db.transaction(async (tx) => {
      await tx.query(slowDdl('long_ddl_kept'));
      await tx.query('CREATE INDEX ON long_ddl_kept (id)');
    });
    expect(await exists('long_ddl_kept')).toBe(true);
    const timedOut = local.server.calls.filter((call) => call.sql?.includes('long_ddl_kept'));
    expect(timedOut.length).toBeGreaterThan(0);
    expect(local.server.calls.some((call) => call.sql?.includes('pg_stat_activity'))).toBe(true);
  });

  it('is cancelled without it, and the call fails as a statement timeout', async () => {
    const db = local.db('admin');
    await expect(db.transaction((tx) => tx.query(slowDdl('long_ddl_cancelled')))).rejects.toMatchObject({
      code: '57014',
    });
    expect(await exists('long_ddl_cancelled')).toBe(false);
  });

  it('fails the transaction when the statement that ran on failed', async () => {
    const db = local.db('admin', { continueAfterTimeout: true, pollMs: 50 });
    await expect(
      db.transaction((tx) => tx.query('DO $$ BEGIN PERFORM pg_sleep(1); PERFORM 1 / 0; END $$')),
    ).rejects.toThrow();
  });

  it('lets a migration with a long statement apply, as the migration custom resource runs it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'logbook-long-migration-'));
    try {
      writeFileSync(join(dir, '9000_long_ddl.sql'), slowDdl('long_ddl_migrated'));
      const db = local.db('admin', { continueAfterTimeout: true, pollMs: 50 });
      expect(await migrate(db, { dir })).toEqual(['9000_long_ddl.sql']);
      expect(await exists('long_ddl_migrated')).toBe(true);
      const recorded = await test.admin.query("SELECT 1 FROM schema_migrations WHERE name = '9000_long_ddl.sql'");
      expect(recorded.rows).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
