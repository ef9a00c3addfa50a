/**
 * A maintenance window's occurrences as they happen: the next start is armed as a delayed job; the start makes the
 * occurrence the window's one in progress and arms its end; the end clears it, lets the caller tell what the window
 * held back, and arms the next start. Every job reads the window again: one armed for an older version of it, or
 * for an occurrence no longer in progress, does nothing.
 */

import { auditOwnedChange } from '../audit/partner-audit.ts';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { armAt, armedAgainIfEarly, armNextOccurrence, isDue, misfired, stillOccurs } from '../schedules/arm.ts';
import { type CompiledSchedule, compileSchedule, occurrenceInProgress } from '../schedules/engine.ts';
import { claimOccurrence } from '../schedules/store.ts';
import * as store from './store.ts';

/** What the caller does once a window's occurrence has ended: tell the alerts it held back. */
export type OnWindowEnd = (windowId: string) => Promise<unknown>;

export type StartJob = { windowId: string; version: number; key: string; at: number };
export type EndJob = { windowId: string; key: string; until: number };

const scheduleType = 'maintenance_window';

export const compileWindow = (row: store.WindowRow): CompiledSchedule =>
  compileSchedule({
    rrule: row.schedule.rrule,
    start: row.schedule.start,
    timezone: row.schedule.timezone,
    exdates: row.schedule.exdates,
  });

/** maintenance.start / maintenance.end in the window's trail (every organization's, for a partner window). */
export function auditLifecycle(
  tx: Tx,
  audit: AuditContext,
  row: store.WindowRow,
  action: 'maintenance.start' | 'maintenance.end',
  details: Record<string, unknown>,
) {
  const event = { action, resourceType: 'maintenance_window', resourceId: row.id, resourceName: row.name, details };
  return auditOwnedChange(tx, audit, row, event);
}

const systemAudit = (db: Db): AuditContext => ({ db: unkeyedDb(db), caller: null, pending: [] });

/**
 * Arms what comes next for a window: an occurrence in progress that has not started is started now (a window created
 * or moved into one), else the next occurrence's start is armed.
 */
export async function armWindow(db: Db, windowId: string, now = new Date()): Promise<void> {
  const row = await store.selectLiveWindow(db, windowId);
  if (!row) return;
  const schedule = compileWindow(row);
  if (!row.active) {
    const current = occurrenceInProgress(schedule, now, row.schedule.durationMinutes);
    if (current) {
      const started = await startOccurrence(
        db,
        { windowId, version: row.version, key: current.key, at: current.at.getTime() },
        now,
      );
      if (started === 'started') return;
    }
  }
  await armNextOccurrence(
    { kind: 'maintenance.start', windowId, version: row.version },
    schedule,
    new Date(Math.max(now.getTime(), row.active ? Date.parse(row.active.until) : 0)),
    now.getTime(),
  );
}

/**
 * The start job: if the window still has this occurrence and is not too late for it (its misfire policy), the
 * occurrence becomes the one in progress (`maintenance.start`, by the system) and its end is armed. The occurrence
 * key claimed in the same transaction makes a repeated job start it once.
 */
export async function startOccurrence(
  db: Db,
  job: StartJob,
  now = new Date(),
): Promise<'started' | 'moved' | 'not-due' | 'skipped' | 'duplicate'> {
  const row = await store.selectLiveWindow(db, job.windowId);
  if (!row || row.version !== job.version) return 'moved';
  if (await armedAgainIfEarly({ kind: 'maintenance.start', ...job }, now.getTime())) return 'not-due';
  const schedule = compileWindow(row);
  if (!stillOccurs(schedule, job.key, job.at)) return 'moved';
  const until = job.at + row.schedule.durationMinutes * 60_000;
  if (until <= now.getTime() || misfired(row.schedule.misfire, job.at, now.getTime())) {
    await armNext(row, now);
    return 'skipped';
  }
  const audit = systemAudit(db);
  let started = false;
  try {
    started = await db.transaction(async (tx) => {
      const locked = await store.selectLiveWindow(tx, job.windowId, true);
      if (!locked || locked.version !== job.version) return false;
      const claim = { scheduleType, scheduleId: job.windowId, occurrenceKey: job.key, phase: 'start' };
      if (!(await claimOccurrence(tx, claim))) return false;
      await store.setActive(tx, job.windowId, {
        key: job.key,
        from: new Date(job.at),
        until: new Date(until),
        manual: false,
      });
      await auditLifecycle(tx, audit, locked, 'maintenance.start', {
        occurrenceKey: job.key,
        from: new Date(job.at).toISOString(),
        until: new Date(until).toISOString(),
        manual: false,
      });
      return true;
    });
  } finally {
    await flushAudit(audit);
  }
  if (!started) return 'duplicate';
  await armAt({ kind: 'maintenance.end', windowId: job.windowId, key: job.key, until }, new Date(until), now.getTime());
  return 'started';
}

/**
 * The end job: while the occurrence it was armed for is still the window's one in progress, it is cleared
 * (`maintenance.end`), `onEnd` tells what it held back, and the next start is armed.
 */
export async function endOccurrence(
  db: Db,
  job: EndJob,
  onEnd: OnWindowEnd,
  now = new Date(),
): Promise<'ended' | 'moved' | 'not-due'> {
  const row = await store.selectLiveWindow(db, job.windowId);
  if (!row?.active || row.active.occurrenceKey !== job.key || Date.parse(row.active.until) !== job.until)
    return 'moved';
  if (!isDue(job.until, now.getTime())) {
    await armAt({ kind: 'maintenance.end', ...job }, new Date(job.until), now.getTime());
    return 'not-due';
  }
  const ended = await endActive(db, job.windowId, systemAudit(db), (active) => active.occurrenceKey === job.key);
  if (!ended) return 'moved';
  await onEnd(job.windowId);
  await armNext(ended, now);
  return 'ended';
}

/**
 * Clears the window's occurrence in progress if `still` holds for it under the row's lock, with `maintenance.end`
 * written by the audit context's actor; the row as it was, or undefined when there was nothing to end.
 */
export async function endActive(
  db: Db,
  windowId: string,
  audit: AuditContext,
  still: (active: NonNullable<store.WindowRow['active']>) => boolean,
): Promise<store.WindowRow | undefined> {
  const system = audit.caller === null;
  try {
    return await db.transaction(async (tx) => {
      const locked = await store.selectLiveWindow(tx, windowId, true);
      if (!locked?.active || !still(locked.active)) return undefined;
      await store.clearActive(tx, windowId);
      await auditLifecycle(tx, audit, locked, 'maintenance.end', {
        occurrenceKey: locked.active.occurrenceKey,
        from: new Date(locked.active.from).toISOString(),
        until: new Date(locked.active.until).toISOString(),
        manual: locked.active.manual,
        endedEarly: Date.parse(locked.active.until) > Date.now() + 1000,
      });
      return locked;
    });
  } finally {
    if (system) await flushAudit(audit);
  }
}

async function armNext(row: store.WindowRow, now: Date): Promise<void> {
  await armNextOccurrence(
    { kind: 'maintenance.start', windowId: row.id, version: row.version },
    compileWindow(row),
    new Date(now.getTime() + 1),
    now.getTime(),
  );
}
