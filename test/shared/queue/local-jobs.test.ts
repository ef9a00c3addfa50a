import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropLocalJobs, enqueue, type Job, keepLocalJobsIn, runJobsLocally } from '#shared/queue/work-queue.ts';

let dir: string;
const ran: Job[] = [];
let onRun: (() => void) | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'logbook-jobs-'));
  runJobsLocally(async (job) => {
    ran.push(job);
    onRun?.();
  });
});
afterAll(async () => {
  dropLocalJobs();
  await rm(dir, { recursive: true, force: true });
});

/** Resolves once the runner has run `count` jobs in all. */
const ranCount = (count: number) =>
  new Promise<void>((resolve) => {
    onRun = () => {
      if (ran.length >= count) resolve();
    };
    onRun();
  });
/** Resolves once the directory holds no job: a job's file goes once it ran. */
async function emptied(): Promise<void> {
  while ((await readdir(dir)).length > 0) await new Promise((resolve) => setImmediate(resolve));
}

describe('delayed jobs of `npm start`', () => {
  it('are kept on disk until they ran, so a restart arms them again', async () => {
    await keepLocalJobsIn(dir);
    await enqueue({ kind: 'maintenance.occurrence', windowId: 'w1' }, 2);
    const kept = await readdir(dir);
    expect(kept).toHaveLength(1);
    expect(JSON.parse(await readFile(join(dir, kept[0]!), 'utf8'))).toMatchObject({
      kind: 'maintenance.occurrence',
      windowId: 'w1',
      dueAt: expect.any(Number),
    });
    // The process stops: its timers go, the file stays; the next process arms it again and it runs once.
    dropLocalJobs();
    expect(await keepLocalJobsIn(dir)).toBe(1);
    await ranCount(1);
    expect(ran).toEqual([{ kind: 'maintenance.occurrence', windowId: 'w1' }]);
    await emptied();
  });

  it('runs at once a kept job whose time passed while nothing ran, and keeps no job due now', async () => {
    await writeFile(join(dir, 'late.json'), JSON.stringify({ kind: 'late', dueAt: Date.now() - 3_600_000 }));
    dropLocalJobs();
    expect(await keepLocalJobsIn(dir)).toBe(1);
    await ranCount(2);
    expect(ran[1]).toEqual({ kind: 'late' });
    await emptied();
    await enqueue({ kind: 'now' });
    expect(await readdir(dir)).toEqual([]);
    await ranCount(3);
    expect(ran[2]).toEqual({ kind: 'now' });
  });
});
