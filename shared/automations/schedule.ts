/**
 * Schedule triggers on the one schedule engine: each occurrence is armed as a delayed job of the work queue (nothing
 * polls). A schedule without a zone runs in each device's local time: one occurrence per zone its devices are in, each
 * firing on that zone's devices, keyed by its local date-time and zone, so a wall time the clock shows twice (the
 * night clocks fall back) runs once. A job reads the automation again and does nothing when it moved (a change bumps
 * its version and arms again).
 */
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { armedAgainIfEarly, armNextOccurrence, misfired, stillOccurs } from '../schedules/arm.ts';
import { type CompiledSchedule, compileSchedule } from '../schedules/engine.ts';
import { fire } from './fire.ts';
import type { ScheduleTrigger } from './schemas.ts';
import { devicesInScope, zonesOf } from './scope.ts';
import * as store from './store.ts';

export const occurrenceJobKind = 'automations.occurrence';

export type OccurrenceJob = {
  automationId: string;
  version: number;
  trigger: number;
  zone: string;
  key: string;
  at: number;
};

export const compileTrigger = (trigger: ScheduleTrigger, zone: string): CompiledSchedule =>
  compileSchedule({ rrule: trigger.schedule.rrule ?? null, start: trigger.schedule.start, timezone: zone });

export interface ScheduleZone {
  trigger: ScheduleTrigger;
  index: number;
  zone: string;
  deviceLocal: boolean;
  deviceCount: number | null;
}

/** Each schedule trigger with the zones it runs in: its own, or (device-local) every zone of the owner's devices. */
export async function scheduleZones(db: Db, automation: store.AutomationRow): Promise<ScheduleZone[]> {
  const schedules = automation.triggers.flatMap((trigger, index) =>
    trigger.type === 'schedule' ? [{ trigger, index }] : [],
  );
  if (schedules.length === 0) return [];
  const deviceZones = schedules.some((s) => !s.trigger.schedule.timezone)
    ? await zonesOf(db, automation)
    : new Map<string, number>();
  return schedules.flatMap(({ trigger, index }): ScheduleZone[] =>
    trigger.schedule.timezone
      ? [{ trigger, index, zone: trigger.schedule.timezone, deviceLocal: false, deviceCount: null }]
      : [...deviceZones].map(([zone, n]) => ({ trigger, index, zone, deviceLocal: true, deviceCount: n })),
  );
}

/**
 * Arms the next occurrence of each schedule trigger in each of its zones not armed yet for this version (nothing for
 * a disabled automation): a trigger's zone is recorded once per version, so arming again arms only what is new.
 */
export async function armAutomation(db: Db, automationId: string, now = new Date()): Promise<void> {
  const row = await store.selectLiveAutomation(db, automationId);
  if (row?.enabled) await armFresh(db, [{ row, zones: await scheduleZones(db, row) }], now);
}

/**
 * A write brought an organization's devices into a zone (a device enrolled, a site's zone changed): the device-local
 * schedules of the enabled automations that reach the organization and were not armed in that zone are, now.
 */
export async function armNewZone(db: Db, orgId: string, zone: string, now = new Date()): Promise<void> {
  const rows = await store.selectDeviceLocalAutomations(db, orgId);
  await armFresh(
    db,
    rows.map((row) => ({
      row,
      zones: row.triggers.flatMap((trigger, index) =>
        trigger.type === 'schedule' && !trigger.schedule.timezone ? [{ trigger, index, zone }] : [],
      ),
    })),
    now,
  );
}

/** Arms schedule triggers in zones not recorded as armed for their automation's version yet, recording them. */
async function armFresh(
  db: Db,
  each: { row: store.AutomationRow; zones: { trigger: ScheduleTrigger; index: number; zone: string }[] }[],
  now: Date,
): Promise<void> {
  const fresh = await store.recordArmedZones(
    db,
    each.flatMap(({ row, zones }) =>
      zones.map((z) => ({ automationId: row.id, version: row.version, trigger: z.index, zone: z.zone })),
    ),
  );
  for (const { row, zones } of each)
    for (const z of zones.filter((z) => fresh.has(`${row.id}:${z.index}@${z.zone}`)))
      await armNextOccurrence(
        { kind: occurrenceJobKind, automationId: row.id, version: row.version, trigger: z.index, zone: z.zone },
        compileTrigger(z.trigger, z.zone),
        now,
        now.getTime(),
      );
}

const armNext = (trigger: ScheduleTrigger, job: OccurrenceJob, now: Date) =>
  armNextOccurrence(
    { kind: occurrenceJobKind, ...job },
    compileTrigger(trigger, job.zone),
    new Date(Math.max(now.getTime(), job.at) + 1),
    now.getTime(),
  );

/**
 * An occurrence's job: when the automation still has it and it is not too late for it (its misfire policy: `skip`
 * runs nothing more than a minute late, `run-once-late` runs once within its grace), it fires on the devices in
 * scope (of its zone, for a device-local schedule); then the next occurrence of that zone is armed.
 */
export async function runOccurrence(
  db: Db,
  job: OccurrenceJob,
  now = new Date(),
): Promise<'ran' | 'moved' | 'not-due' | 'misfired' | 'duplicate'> {
  const row = await store.selectLiveAutomation(db, job.automationId);
  if (!row?.enabled || row.version !== job.version) return 'moved';
  const trigger = row.triggers[job.trigger];
  if (trigger?.type !== 'schedule') return 'moved';
  if (await armedAgainIfEarly({ kind: occurrenceJobKind, ...job }, now.getTime())) return 'not-due';
  if (!stillOccurs(compileTrigger(trigger, job.zone), job.key, job.at)) return 'moved';
  const misfire = { policy: trigger.schedule.misfire, graceMinutes: trigger.schedule.graceMinutes };
  if (misfired(misfire, job.at, now.getTime())) {
    await armNext(trigger, job, now);
    return 'misfired';
  }
  const occurrenceKey = `schedule:${job.trigger}:${job.key}@${job.zone}`;
  // An occurrence's runs are written in one transaction: one of them found, it ran (a duplicate delivery).
  if (await store.occurrenceRan(db, row.id, occurrenceKey)) {
    await armNext(trigger, job, now);
    return 'duplicate';
  }
  const deviceLocal = !trigger.schedule.timezone;
  const devices = await devicesInScope(db, row, deviceLocal ? { zone: job.zone } : {});
  const audit: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
  const fired = await fire(db, {
    automation: row,
    trigger: { type: 'schedule', occurrenceKey, timezone: job.zone, occurrence: job.key },
    guarded: true,
    devices,
    audit,
    startedBy: row.createdBy,
  }).finally(() => flushAudit(audit));
  await armNext(trigger, job, now);
  return fired.duplicate ? 'duplicate' : 'ran';
}
