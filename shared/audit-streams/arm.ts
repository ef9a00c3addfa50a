/**
 * Arming the delivery of audit streams (docs/audit-streaming.md "Delivery"): the rows a write seals arm one coalesced
 * job per organization on the work queue. Kept apart from the delivery itself, so that every function that writes
 * audit rows loads only this and the queue.
 */
import { type Db, one } from '../db/db.ts';
import { enqueue } from '../queue/work-queue.ts';

/** The work queue's job of one organization: deliver what its destinations have not taken yet. */
export const deliverJobKind = 'audit-streams.deliver';

/** On SQS, at most one job per organization per this many milliseconds from one process (writes in between share it). */
const coalesceMs = 1000;
/** Per organization: when the job this process armed last runs (or ran); gone once it started here. */
const armedRunAt = new Map<string, number>();
/**
 * Per organization whose job runs in this process: how many run, and whether a write came since the last one read
 * its heads (that job then delivers once more before it ends, instead of a job of its own waiting for the cursors).
 */
const running = new Map<string, { jobs: number; again: boolean }>();

/**
 * Arms the delivery of these organizations' new rows (called once their rows are committed). A job armed and not
 * started yet covers a write, since it reads the head when it starts. In this process's own queue (no
 * WORK_QUEUE_URL) a job's start and end are seen: a write while its organization's job runs tells that job to go on
 * once more (jobAgain), and a write with no job armed or running arms one at once, so a row waits for no timer. On
 * SQS a job whose time has come may have started, so a write then arms another, at once, or a second after the last
 * one, so a busy organization costs at most one job a second (a job that finds a cursor held marks it, and its
 * holder delivers once more: claimCursor).
 */
export async function armDelivery(orgIds: readonly string[]): Promise<void> {
  const now = Date.now();
  const seesStart = !process.env.WORK_QUEUE_URL;
  const armed: Promise<void>[] = [];
  for (const orgId of orgIds) {
    const runAt = armedRunAt.get(orgId);
    if (runAt !== undefined && (runAt > now || seesStart)) continue;
    const job = seesStart ? running.get(orgId) : undefined;
    if (job) {
      job.again = true;
      continue;
    }
    const delayMs = seesStart || runAt === undefined || now - runAt >= coalesceMs ? 0 : coalesceMs - (now - runAt);
    armedRunAt.set(orgId, now + delayMs);
    armed.push(enqueue({ kind: deliverJobKind, orgId }, delayMs / 1000));
  }
  await Promise.all(armed);
}

/** The organization's job started: a write from now on needs a job of its own, or (seen here) this one once more. */
export function jobStarted(orgId: string): void {
  armedRunAt.delete(orgId);
  const job = running.get(orgId);
  if (job) job.jobs += 1;
  else running.set(orgId, { jobs: 1, again: false });
}

/** Whether a write came while the organization's job ran (since it started, or since the last answer here). */
export function jobAgain(orgId: string): boolean {
  const job = running.get(orgId);
  if (!job?.again) return false;
  job.again = false;
  return true;
}

/**
 * The organization's job ended; answers whether a write came since it last read its heads (a job that threw): the
 * caller arms a job for it.
 */
export function jobEnded(orgId: string): boolean {
  const job = running.get(orgId);
  if (!job) return false;
  const again = job.again;
  job.again = false;
  job.jobs -= 1;
  if (job.jobs === 0) running.delete(orgId);
  return again;
}

/** Whether any destination exists: asked at most once a minute per process, known at once where one is created. */
let known: { exist: boolean; until: number } | undefined;
const knownForMs = 60_000;

/** A destination was created in this process: writes arm their delivery from now on. */
export function destinationCreated(): void {
  known = { exist: true, until: Date.now() + knownForMs };
}

async function destinationsMayExist(db: Db): Promise<boolean> {
  if (known && known.until > Date.now()) return known.exist;
  const found = await one<{ exist: boolean }>(
    db,
    'SELECT EXISTS (SELECT FROM audit_streams WHERE deleted_at IS NULL) AS exist',
  );
  known = { exist: found?.exist ?? true, until: Date.now() + knownForMs };
  return known.exist;
}

/**
 * The listener of sealed audit rows (shared/audit/sealed.ts) and of stored diagnostic log entries
 * (shared/agent-logs/stored.ts; device event logs seal an audit row of their own): arms their organizations'
 * delivery, unless no destination exists at all, so writes without streams cost no job and no statement after them.
 * Without a Db (told after a commit) only what this process knows already can spare the job. A destination created
 * in another process is seen within a minute; its rows wait meanwhile, behind its cursor, never lost.
 */
export async function armAfterSeal(orgIds: string[], db: Db | undefined): Promise<void> {
  if (db && !(await destinationsMayExist(db).catch(() => true))) return;
  if (!db && known && known.until > Date.now() && !known.exist) return;
  await armDelivery(orgIds);
}
