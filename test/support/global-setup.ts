import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { prepareDatabase } from '#infra/local/database.ts';
import { startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { createPgDb } from '#shared/db/pg.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Administrator connection string of the server (any database). */
    serverUrl: string;
    /** The migrated template every test file clones. */
    templateDatabase: string;
    /** Prefix of this run's databases. */
    databasePrefix: string;
  }
}

export const databaseName = (url: string, name: string) => {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
};

interface Prepared {
  serverUrl: string;
  template: string;
  prefix: string;
  teardown: () => Promise<void>;
}

/** The one server and template of this run, shared by the projects of vitest.config.ts (each calls the setup). */
const run = globalThis as typeof globalThis & { logbookTestRun?: { prepared: Promise<Prepared>; users: number } };

/**
 * Starts an embedded PostgreSQL (or uses DATABASE_URL), migrates one template
 * database, and hands it to the test files, which each clone it. Every project of the run shares them; the last
 * project to finish stops them.
 */
export default async function setup(project: TestProject) {
  run.logbookTestRun ??= { prepared: prepare(), users: 0 };
  const shared = run.logbookTestRun;
  shared.users += 1;
  const { serverUrl, template, prefix, teardown } = await shared.prepared;
  project.provide('serverUrl', serverUrl);
  project.provide('templateDatabase', template);
  project.provide('databasePrefix', prefix);
  return async () => {
    shared.users -= 1;
    if (shared.users === 0) await teardown();
  };
}

async function prepare(): Promise<Prepared> {
  keepFailedExitCode();
  let serverUrl = process.env.DATABASE_URL;
  let stop: (() => Promise<void>) | undefined;
  if (!serverUrl) {
    const pg = await startEmbeddedPostgres({ dir: `.data/test-postgres-${process.pid}`, persistent: false });
    serverUrl = pg.url;
    stop = pg.stop;
  }
  const prefix = `logbook_test_${randomBytes(4).toString('hex')}`;
  const template = `${prefix}_template`;
  const admin = createPgDb({ connectionString: serverUrl, max: 4 });
  await admin.query(`CREATE DATABASE ${template}`);
  await prepareDatabase(databaseName(serverUrl, template));
  const teardown = async () => {
    // The embedded server is removed whole on stop: its databases go with it. On the server of DATABASE_URL this
    // run's databases are dropped (each DROP DATABASE waits for a checkpoint: a few at once share one).
    if (!stop) {
      const { rows } = await admin.query<{ datname: string }>(
        'SELECT datname FROM pg_database WHERE starts_with(datname, :prefix::text)',
        { prefix },
      );
      const names = rows.map((row) => row.datname);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let name = names.pop(); name; name = names.pop())
            await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        }),
      );
    }
    await admin.close();
    await stop?.();
  };
  return { serverUrl, template, prefix, teardown };
}

/**
 * embedded-postgres installs async-exit-hook, whose 'beforeExit' handler calls process.exit(0): that would turn the
 * exit code 1 of a run with failed tests into 0 and let CI pass it. The code vitest set is kept.
 */
function keepFailedExitCode() {
  let code: typeof process.exitCode;
  process.prependListener('beforeExit', () => {
    code = process.exitCode;
  });
  process.prependListener('exit', () => {
    if (code) process.exitCode = code;
  });
}
