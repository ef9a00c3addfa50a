/**
 * Event triggers: the write that causes an event tells it (shared/queue/device-events.ts), and its job fires every
 * enabled automation of the device's organization and partner that the event names, when the event matches the
 * trigger's filter, the device is in the automation's scope and meets its conditions. The run is keyed by the event's
 * id: an event delivered twice runs once.
 */
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import type { DeviceEvent } from '../queue/device-events.ts';
import { fireAll } from './fire.ts';
import { armNewZone } from './schedule.ts';
import type { Trigger } from './schemas.ts';
import { devicesInScope } from './scope.ts';
import * as store from './store.ts';

type EventTrigger = Extract<Trigger, { type: 'event' }>;

/** Whether an event meets a trigger's filter (its severities, sources, field key and value, posture category). */
export function matches(trigger: EventTrigger, event: DeviceEvent): boolean {
  if (trigger.event !== event.event) return false;
  const filter = trigger.filter;
  if (!filter) return true;
  const data = event.data ?? {};
  if (filter.severities && !filter.severities.includes(data.severity as never)) return false;
  if (filter.sources && !filter.sources.includes(data.source as never)) return false;
  if (filter.key !== undefined && data.key !== filter.key) return false;
  if (filter.value !== undefined && data.value !== filter.value) return false;
  return filter.category === undefined || data.category === filter.category;
}

/** The job of a device event: the automations it triggers fire on the device. */
export const runDeviceEvent = (db: Db, event: DeviceEvent): Promise<number> => runDeviceEvents(db, [event]);

/**
 * Device events evaluated together (the events of one batch of the work queue): their devices read in one statement,
 * the automations they name in one statement per event name, each automation's scope read once for all its devices,
 * and the runs of all its events written together (fireAll). Answers the runs created.
 */
export async function runDeviceEvents(db: Db, events: DeviceEvent[]): Promise<number> {
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
  const devices = new Map(
    (await store.selectDevicesById(db, [...new Set(unique.map((e) => e.deviceId))])).map((d) => [d.id, d]),
  );
  const known = unique.filter((e) => devices.has(e.deviceId));
  if (known.length === 0) return 0;
  const owners = [
    ...new Map([...devices.values()].map((d) => [d.orgId, { orgId: d.orgId, partnerId: d.partnerId }])).values(),
  ];
  // An enrolled device may bring its organization into a zone new to its device-local schedules.
  const enrolledIn = new Map(
    known
      .filter((e) => e.event === 'device.enrolled')
      .map((e) => devices.get(e.deviceId)!)
      .map((d) => [`${d.orgId} ${d.timezone}`, d] as const),
  );
  for (const d of enrolledIn.values()) await armNewZone(db, d.orgId, d.timezone);
  let fired = 0;
  for (const name of new Set(known.map((e) => e.event))) {
    for (const automation of await store.selectEventAutomations(db, owners, name)) {
      const matching = known.filter((e) => {
        const device = devices.get(e.deviceId)!;
        return (
          device.partnerId === automation.partnerId &&
          (!automation.orgId || automation.orgId === device.orgId) &&
          automation.triggers.some((t) => t.type === 'event' && matches(t, e))
        );
      });
      if (matching.length === 0) continue;
      const inScope = new Map(
        (await devicesInScope(db, automation, { deviceIds: [...new Set(matching.map((e) => e.deviceId))] })).map(
          (d) => [d.id, d],
        ),
      );
      const occurrences = matching.flatMap((e) => {
        const device = inScope.get(e.deviceId);
        if (!device) return [];
        const trigger = {
          type: 'event' as const,
          occurrenceKey: `event:${e.eventId}`,
          event: e.event,
          eventId: e.eventId,
        };
        return [{ trigger, devices: [device] }];
      });
      if (occurrences.length === 0) continue;
      const audit: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
      const result = await fireAll(
        db,
        { automation, guarded: true, audit, startedBy: automation.createdBy },
        occurrences,
      ).finally(() => flushAudit(audit));
      fired += result.runIds.length;
    }
  }
  return fired;
}
