/**
 * Events of a device that automations can be triggered by, told by the write that causes them: an enrollment, an
 * agent coming online or going offline, an alert raised (or occurring again), a custom field changed, a posture
 * finding. Each is a job of the work queue (its runner is the automations domain's, in functions/queue/jobs.ts), so the
 * domains that cause events know nothing of automations, and nothing polls.
 */
import { enqueue } from './work-queue.ts';

export const deviceEventKind = 'automations.event';
/** Many events of one write in one job: evaluated together, as the queue worker evaluates a batch of single ones. */
export const deviceEventsKind = 'automations.events';
/** Events per job of a bulk write: a job stays a few kilobytes, far under a queue message's 256 KB. */
const eventsPerJob = 100;

export interface DeviceEvent {
  event:
    | 'device.enrolled'
    | 'device.online'
    | 'device.offline'
    | 'alert.raised'
    | 'custom_field.changed'
    | 'posture.detected';
  /** Unique per event: a repeated delivery of it runs an automation once. */
  eventId: string;
  deviceId: string;
  /** What filters match: an alert's severity and source type, a field's key and value, a posture category. */
  data?: Record<string, string | number | boolean | null>;
}

/** Tells automations of a device event; never throws (enqueue logs a job it cannot queue). */
export function tellDeviceEvent(event: DeviceEvent): Promise<void> {
  return enqueue({ kind: deviceEventKind, ...event });
}

/**
 * Tells automations of the events of one bulk write (an import's values, a bulk set): a job per hundred events, so
 * ten thousand values are a hundred jobs, not ten thousand; never throws.
 */
export async function tellDeviceEvents(events: DeviceEvent[]): Promise<void> {
  for (let i = 0; i < events.length; i += eventsPerJob)
    await enqueue({ kind: deviceEventsKind, events: events.slice(i, i + eventsPerJob) });
}

export const zonesChangedKind = 'automations.zones';

/**
 * Tells automations that an organization's devices keep a local time (a site's zone changed to it): device-local
 * schedules not armed in that zone yet are armed in it. An enrolled device tells it by its event.
 */
export function tellZoneChanged(orgId: string, zone: string): Promise<void> {
  return enqueue({ kind: zonesChangedKind, orgId, zone });
}
