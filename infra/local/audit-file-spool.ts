/**
 * The local audit spool (shared/audit/spool.ts): failed audit rows are appended as JSON lines to
 * `<dir>/pending.jsonl`. A replay moves that file aside (`replaying-<instant>.jsonl`, so rows spooled meanwhile
 * start a new file) and appends its rows 100 per statement, rewriting the file after each batch, so a replay
 * interrupted by a crash resumes where it stopped and never appends a row twice.
 */
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type AuditSpool, replayAuditRows } from '#shared/audit/spool.ts';
import type { AuditRowInput } from '#shared/audit/store.ts';
import type { Db } from '#shared/db/db.ts';

const batchRows = 100;

export interface FileAuditSpool extends AuditSpool {
  /** Appends every spooled row; the number replayed. A failing batch stays spooled for the next replay. */
  replay(db: Db): Promise<number>;
}

export function fileAuditSpool(dir: string): FileAuditSpool {
  const pending = join(dir, 'pending.jsonl');
  let replaying: Promise<number> | undefined;

  async function replayFile(db: Db, file: string): Promise<number> {
    const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '');
    let replayed = 0;
    while (replayed < lines.length) {
      const batch = lines.slice(replayed, replayed + batchRows);
      await replayAuditRows(
        db,
        batch.map((line) => JSON.parse(line) as AuditRowInput),
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

  return {
    async put(row) {
      await mkdir(dir, { recursive: true });
      await appendFile(pending, `${JSON.stringify(row)}\n`);
    },
    replay(db) {
      // One replay at a time: the timer and a shutdown may ask together.
      replaying ??= (async () => {
        await mkdir(dir, { recursive: true });
        await rename(pending, join(dir, `replaying-${Date.now()}.jsonl`)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        let replayed = 0;
        const files = (await readdir(dir)).filter((name) => /^replaying-\d+\.jsonl$/.test(name)).sort();
        for (const name of files) replayed += await replayFile(db, join(dir, name));
        return replayed;
      })().finally(() => {
        replaying = undefined;
      });
      return replaying;
    },
  };
}
