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
import { fire } from './fire.ts';
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
export async function runDeviceEvent(db: Db, event: DeviceEvent): Promise<number> {
  const [device] = await store.selectDevicesById(db, [event.deviceId]);
  if (!device) return 0;
  let fired = 0;
  for (const automation of await store.selectEventAutomations(db, device, event.event)) {
    if (!automation.triggers.some((t) => t.type === 'event' && matches(t, event))) continue;
    const devices = await devicesInScope(db, automation, { deviceIds: [device.id] });
    if (devices.length === 0) continue;
    const audit: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
    const result = await fire(db, {
      automation,
      trigger: { type: 'event', occurrenceKey: `event:${event.eventId}`, event: event.event, eventId: event.eventId },
      guarded: true,
      devices,
      audit,
      startedBy: automation.createdBy,
    }).finally(() => flushAudit(audit));
    fired += result.runIds.length;
  }
  return fired;
}
