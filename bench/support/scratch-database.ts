import { randomBytes } from 'node:crypto';
import { startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { migrate } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';

export interface ScratchDatabase {
  /** Administrator connection string of the scratch database. */
  url: string;
  /** Where it runs, for the report. */
  server: string;
  /** Drops the database (and stops the embedded server); safe to call twice. */
  drop(): Promise<void>;
}

/**
 * A migrated throwaway database for one benchmark run: on DATABASE_URL's server, or on an embedded
 * PostgreSQL started for the run under .data/bench-postgres and removed afterwards. Dropped on Ctrl-C too.
 */
export async function createScratchDatabase(purpose: string): Promise<ScratchDatabase> {
  let serverUrl = process.env.DATABASE_URL;
  let stopServer: (() => Promise<void>) | undefined;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres({
      dir: '.data/bench-postgres',
      persistent: false,
      log: console.error,
    });
    serverUrl = embedded.url;
    stopServer = embedded.stop;
  }
  const name = `logbook_bench_${purpose}_${randomBytes(4).toString('hex')}`;
  const server = createPgDb({ connectionString: serverUrl, max: 1, applicationName: 'logbook-bench' });
  await server.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;

  let dropped: Promise<void> | undefined;
  const drop = () =>
    (dropped ??= (async () => {
      await server.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.close();
      await stopServer?.();
    })());
  const interrupted = () => void drop().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);

  const admin = createPgDb({ connectionString: url.toString(), max: 1, applicationName: 'logbook-bench-migrate' });
  try {
    await migrate(admin);
  } catch (error) {
    await drop();
    throw error;
  } finally {
    await admin.close();
  }
  return {
    url: url.toString(),
    server: stopServer
      ? `embedded PostgreSQL in .data/bench-postgres (non-persistent)`
      : `DATABASE_URL's server (${url.hostname}:${url.port || 5432})`,
    drop: async () => {
      process.off('SIGINT', interrupted);
      await drop();
    },
  };
}
