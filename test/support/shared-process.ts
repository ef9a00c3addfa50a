/**
 * The setup of every test file of the `shared` project, whose files run one after another in the same process with
 * the modules already loaded (loading the route table and every domain takes seconds a file). Each file starts as a
 * fresh process would: the environment as the worker started with it, no job armed by an earlier file, and the API's
 * connection closed (the file's own database opens it anew). A file that changes module state beyond these, or reads
 * the environment once at load, belongs to the `isolated` project (vitest.config.ts).
 */
import { closeAppDb, closeAuditAdminDb } from '#shared/db/client.ts';
import { dropLocalJobs } from '#shared/queue/work-queue.ts';

const store = globalThis as typeof globalThis & { logbookStartEnv?: Record<string, string | undefined> };
store.logbookStartEnv ??= { ...process.env };
const start = store.logbookStartEnv;
for (const name of Object.keys(process.env)) if (!(name in start)) delete process.env[name];
Object.assign(process.env, start);
dropLocalJobs();
await closeAppDb();
await closeAuditAdminDb();
