/**
 * The local audit spool (shared/audit/spool.ts): failed audit rows are appended as JSON lines to
 * `<dir>/<database>/pending.jsonl`, each with the database it belongs to (the cluster's system identifier and the
 * database name): every server started from one checkout shares `<dir>`, and a row is replayed only into its own
 * database. A replay moves that file aside (`replaying-<instant>.jsonl`, so rows spooled meanwhile start a new file)
 * and appends its rows 100 per statement, rewriting the file after each batch, so a replay interrupted by a crash
 * resumes where it stopped and never appends a row twice. Rows of other databases are kept and reported (`held`).
 */
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type AuditSpool, replayAuditRows } from '#shared/audit/spool.ts';
import type { AuditRowInput } from '#shared/audit/store.ts';
import type { Db } from '#shared/db/db.ts';
import { type DatabaseIdentity, selectDatabaseIdentity } from '#shared/db/identity.ts';

const batchRows = 100;

/** One spooled row and the database it belongs to. */
interface SpooledLine {
  database: DatabaseIdentity;
  row: AuditRowInput;
}

/** Rows kept for a database other than the one asked about (null: spooled before rows named their database). */
export interface HeldRows {
  database: DatabaseIdentity | null;
  rows: number;
}

export interface FileAuditSpool extends AuditSpool {
  /** Appends every row spooled for `db`'s database; the number replayed. A failing batch stays spooled. */
  replay(db: Db): Promise<number>;
  /** The rows kept for other databases than `db`'s, per database. */
  held(db: Db): Promise<HeldRows[]>;
}

/** The directory of a database's rows: `<system identifier>-<name>`, the name URI-encoded. */
const folderOf = (database: DatabaseIdentity) =>
  `${database.systemIdentifier}-${encodeURIComponent(database.name).replaceAll('.', '%2E')}`;

const isSpoolFile = (name: string) => name === 'pending.jsonl' || /^replaying-\d+\.jsonl$/.test(name);

const linesOf = async (file: string) => (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '');

const missingIsEmpty = (error: NodeJS.ErrnoException) => {
  if (error.code !== 'ENOENT') throw error;
  return [];
};

/** A spool under `dir` whose rows belong to `database` (the database the server writes its audit rows to). */
export function fileAuditSpool(dir: string, database: DatabaseIdentity): FileAuditSpool {
  const own = join(dir, folderOf(database));
  let replaying: Promise<number> | undefined;

  async function replayFile(db: Db, target: DatabaseIdentity, file: string): Promise<number> {
    const lines = await linesOf(file);
    let replayed = 0;
    while (replayed < lines.length) {
      const batch = lines.slice(replayed, replayed + batchRows).map((line) => JSON.parse(line) as SpooledLine);
      // A line naming another database (a file moved by hand) goes back to that database's rows.
      const foreign = batch.filter((line) => folderOf(line.database) !== folderOf(target));
      for (const line of foreign) await append(line);
      await replayAuditRows(
        db,
        batch.filter((line) => !foreign.includes(line)).map((line) => line.row),
      );
      replayed += batch.length;
      const rest = lines.slice(replayed);
      if (rest.length === 0) await rm(file);
      else {
        await writeFile(`${file}.tmp`, `${rest.join('\n')}\n`);
        await rename(`${file}.tmp`, file);
      }
    }
    return replayed;
  }

  async function append(line: SpooledLine): Promise<void> {
    const folder = join(dir, folderOf(line.database));
    await mkdir(folder, { recursive: true });
    await appendFile(join(folder, 'pending.jsonl'), `${JSON.stringify(line)}\n`);
  }

  return {
    put: (row) => append({ database, row }),
    replay(db) {
      // One replay at a time: the timer and a shutdown may ask together.
      replaying ??= (async () => {
        const target = await selectDatabaseIdentity(db);
        const folder = folderOf(target) === folderOf(database) ? own : join(dir, folderOf(target));
        await mkdir(folder, { recursive: true });
        await rename(join(folder, 'pending.jsonl'), join(folder, `replaying-${Date.now()}.jsonl`)).catch(
          (error: NodeJS.ErrnoException) => {
            if (error.code !== 'ENOENT') throw error;
          },
        );
        let replayed = 0;
        const files = (await readdir(folder)).filter((name) => /^replaying-\d+\.jsonl$/.test(name)).sort();
        for (const name of files) replayed += await replayFile(db, target, join(folder, name));
        return replayed;
      })().finally(() => {
        replaying = undefined;
      });
      return replaying;
    },
    async held(db) {
      const mine = folderOf(await selectDatabaseIdentity(db));
      const held: HeldRows[] = [];
      const entries = await readdir(dir, { withFileTypes: true }).catch(missingIsEmpty);
      // Files directly under `dir` were spooled before rows named their database: never replayed, only reported.
      const unnamed = entries.filter((entry) => entry.isFile() && isSpoolFile(entry.name));
      let rows = 0;
      for (const entry of unnamed) rows += (await linesOf(join(dir, entry.name))).length;
      if (rows > 0) held.push({ database: null, rows });
      for (const entry of entries.filter((entry) => entry.isDirectory() && entry.name !== mine)) {
        let database: DatabaseIdentity | undefined;
        let count = 0;
        for (const name of (await readdir(join(dir, entry.name))).filter(isSpoolFile)) {
          const lines = await linesOf(join(dir, entry.name, name));
          count += lines.length;
          if (lines[0]) database ??= (JSON.parse(lines[0]) as SpooledLine).database;
        }
        if (count > 0 && database) held.push({ database, rows: count });
      }
      return held;
    },
  };
}
