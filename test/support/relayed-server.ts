import { rmSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { prepareDatabase, roleUrls } from '#infra/local/database.ts';
import { type RunningPostgres, startEmbeddedPostgres } from '#infra/local/embedded-postgres.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { type Api, startApi } from './api.ts';
import { type FreezingRelay, startFreezingRelay } from './server-processes.ts';

/** A dedicated PostgreSQL server, the API reaching it through a relay that can freeze it, and a superuser on it. */
export interface RelayedServer {
  readonly relay: FreezingRelay;
  /** Superuser connection to the file's database, straight to the server: looking behind the API. */
  readonly admin: Db;
  readonly api: Api;
}

/**
 * Registers the hooks of a fault test file: before all, an embedded PostgreSQL of its own (`name` names its data
 * directory and database), migrated, a freezing relay in front of it, and the API on the relay with short timeouts
 * (1 s statements, 1 s connects); after all, everything stopped, the server thawed first whatever failed. Call it at
 * the top of the file, before the file's own beforeAll, which then runs after these.
 */
export function useRelayedServer(name: string): RelayedServer {
  const dir = `.data/test-${name}-${process.pid}`;
  const database = `logbook_${name.replaceAll('-', '_')}`;
  const saved: Record<string, string | undefined> = {};
  let server: RunningPostgres | undefined;
  let relay: FreezingRelay | undefined;
  let admin: Db | undefined;
  let api: Api | undefined;

  beforeAll(async () => {
    server = await startEmbeddedPostgres({ dir, persistent: true });
    const { port } = server;
    const bootstrap = createPgDb({ connectionString: server.url, max: 1 });
    await bootstrap.query(`CREATE DATABASE ${database}`);
    await bootstrap.close();
    const adminUrl = `postgres://postgres:logbook-local@127.0.0.1:${port}/${database}`;
    await prepareDatabase(adminUrl);
    relay = await startFreezingRelay(port, dir);
    const appUrl = new URL(roleUrls(adminUrl).app);
    appUrl.port = String(relay.port);
    const env = { APP_DATABASE_URL: appUrl.toString(), DB_STATEMENT_TIMEOUT_MS: '1000', DB_CONNECT_TIMEOUT_MS: '1000' };
    for (const [variable, value] of Object.entries(env)) {
      saved[variable] = process.env[variable];
      process.env[variable] = value;
    }
    await closeAppDb();
    admin = createPgDb({ connectionString: adminUrl, max: 2, connectTimeoutMs: 1000 });
    api = await startApi();
  }, 120_000);

  afterAll(async () => {
    // Never left frozen, whatever failed.
    relay?.thaw();
    await api?.close();
    await closeAppDb();
    await admin?.close();
    relay?.close();
    for (const [variable, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[variable];
      else process.env[variable] = value;
    }
    await server?.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  return {
    get relay() {
      return relay!;
    },
    get admin() {
      return admin!;
    },
    get api() {
      return api!;
    },
  };
}
