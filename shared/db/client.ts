import type { Db } from './db.ts';
import { createPgDb } from './pg.ts';

/**
 * The API's connection, as role logbook_app, built once per cold start.
 * Locally and in tests: APP_DATABASE_URL (node-postgres).
 */
let app: Db | undefined;

export function appDb(): Db {
  if (!app) {
    const url = process.env.APP_DATABASE_URL;
    if (!url) throw new Error('APP_DATABASE_URL is not set');
    app = createPgDb({ connectionString: url, applicationName: 'logbook-api' });
  }
  return app;
}

/** Closes the API's connection; the next `appDb()` opens a new one from the environment. */
export async function closeAppDb(): Promise<void> {
  const current = app;
  app = undefined;
  await current?.close();
}
