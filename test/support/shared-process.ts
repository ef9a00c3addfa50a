/**
 * The setup of every test file of the `shared` project, whose files run one after another in the same process with
 * the modules already loaded (loading the route table and every domain takes seconds a file). Each file starts as a
 * fresh process would: the environment as the worker started with it and no job armed by an earlier file; and it
 * ends with the API's connections closed, which waits for whatever the file started (a request still being answered,
 * a job still running) and fails the file that leaves one running, instead of the next file hanging on it. A file
 * that changes module state beyond these, or reads the environment once at load, belongs to the `isolated` project
 * (vitest.config.ts).
 */
import { afterAll } from 'vitest';
import { closeAppDb, closeAuditAdminDb } from '#shared/db/client.ts';
import { dropLocalJobs } from '#shared/queue/work-queue.ts';

const store = globalThis as typeof globalThis & { logbookStartEnv?: Record<string, string | undefined> };
store.logbookStartEnv ??= { ...process.env };
const start = store.logbookStartEnv;
for (const name of Object.keys(process.env)) if (!(name in start)) delete process.env[name];
Object.assign(process.env, start);
dropLocalJobs();

/** A bound on the wait, not a guess of its length: a connection still in use this long is held by a running task. */
const heldAfterMs = 30_000;

afterAll(async () => {
  let timer: NodeJS.Timeout | undefined;
  const held = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `The API's database connections were still in use ${heldAfterMs / 1000} s after the file ended: a request or job it started is still running`,
          ),
        ),
      heldAfterMs,
    );
  });
  try {
    await Promise.race([Promise.all([closeAppDb(), closeAuditAdminDb()]), held]);
  } finally {
    clearTimeout(timer);
  }
});
