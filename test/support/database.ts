import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { type DatabaseUrls, roleUrls } from '#infra/local/database.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { databaseName } from './global-setup.ts';

export interface TestDatabase {
  name: string;
  urls: DatabaseUrls;
  /** Superuser connection to this database: arranging rows and looking behind the API. */
  admin: Db;
  close(): Promise<void>;
}

/**
 * A fresh database for one test file, cloned from the migrated template, and the
 * API's connection (APP_DATABASE_URL) pointed at it.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = inject('serverUrl');
  const name = `${inject('databasePrefix')}_${randomBytes(4).toString('hex')}`;
  const server = createPgDb({ connectionString: serverUrl, max: 1 });
  try {
    await server.query(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`);
  } finally {
    await server.close();
  }
  const adminUrl = databaseName(serverUrl, name);
  const urls = roleUrls(adminUrl);
  process.env.APP_DATABASE_URL = urls.app;
  await closeAppDb();
  const admin = createPgDb({ connectionString: adminUrl, max: 4 });
  return {
    name,
    urls,
    admin,
    async close() {
      await closeAppDb();
      await admin.close();
    },
  };
}
