/**
 * Arming occurrences as delayed jobs of the work queue: nothing polls. A job carries what it was armed for (the
 * object's id, its version, the occurrence key and time); when it runs it reads the object again and does nothing if
 * the object moved (changed, deleted), so changing or deleting a schedule never has to cancel a job.
 */
import { enqueue, type Job } from '../queue/work-queue.ts';
import { type CompiledSchedule, nextOccurrence, occurrencesBetween } from './engine.ts';
import type { Misfire } from './schemas.ts';

/**
 * The longest single delay armed: SQS delays 15 minutes at most and the worker sends a job on until it is due; an
 * in-process timer holds at most 24.8 days. A job due later runs early, finds it is not due and arms itself again.
 */
const maxArmDelaySeconds = 7 * 86_400;

/** Arms `job` to run at `at` (at once when `at` has passed). */
export function armAt(job: Job, at: Date, now = Date.now()): Promise<void> {
  const delay = Math.min(maxArmDelaySeconds, Math.max(0, Math.ceil((at.getTime() - now) / 1000)));
  return enqueue(job, delay);
}

/** Whether a job armed for `at` is due (a second of slack for timers that fire a little early). */
export const isDue = (at: number, now = Date.now()) => at <= now + 1000;

/**
 * Whether an occurrence due at `at` is too late to run at `now` (the service was down, a queue held it): `skip` runs
 * nothing more than a minute late; `run-once-late` runs once within its grace period.
 */
export function misfired(misfire: Misfire, at: number, now = Date.now()): boolean {
  const graceMs = misfire.policy === 'skip' ? 60_000 : misfire.graceMinutes * 60_000;
  return now - at > graceMs;
}

/** Arms `job` for the schedule's next occurrence at or after `after`, with its key and time; nothing once it ended. */
export async function armNextOccurrence(
  job: Job,
  schedule: CompiledSchedule,
  after: Date,
  now = Date.now(),
): Promise<void> {
  const next = nextOccurrence(schedule, after);
  if (next) await armAt({ ...job, key: next.key, at: next.at.getTime() }, next.at, now);
}

/** A job that came before its time (`at`) is armed again for it: true when it was. */
export async function armedAgainIfEarly(job: Job & { at: number }, now = Date.now()): Promise<boolean> {
  if (isDue(job.at, now)) return false;
  await armAt(job, new Date(job.at), now);
  return true;
}

/** Whether the schedule (as it is now) still has the occurrence `key` at the instant `at`. */
export const stillOccurs = (schedule: CompiledSchedule, key: string, at: number) =>
  occurrencesBetween(schedule, new Date(at), new Date(at + 1), 5).some((o) => o.key === key);
