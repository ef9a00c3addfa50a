import { attemptDelivery } from '#shared/alerts/psa-delivery.ts';
import { type NumberTicketsJob, numberTicketsJobKind, runNumberTicketsJob } from '#shared/alerts/ticket-numbers.ts';
import { historyMoveJobKind, runHistoryMove } from '#shared/audit/history-lane.ts';
import { stripeJobKind, verifyStripeJob } from '#shared/audit/integrity-watch.ts';
import { replayQueuedAuditRow } from '#shared/audit/spool.ts';
import type { AuditRowInput } from '#shared/audit/store.ts';
import type { StripeJob } from '#shared/audit/watch-plan.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { deliverJobKind } from '#shared/audit-streams/arm.ts';
import { deliverOrganization } from '#shared/audit-streams/delivery.ts';
import { runDeviceEvent, runDeviceEvents } from '#shared/automations/events.ts';
import { dequeueJobKind, runQueuedItem } from '#shared/automations/fire.ts';
import { armNewZone, type OccurrenceJob, occurrenceJobKind, runOccurrence } from '#shared/automations/schedule.ts';
import { appDb, auditAdminDb } from '#shared/db/client.ts';
import { type PresenceJob, presenceJobKind, runPresenceJob } from '#shared/live-query/connections.ts';
import { type EndJob, endOccurrence, type StartJob, startOccurrence } from '#shared/maintenance/lifecycle.ts';
import { type OfflineJob, offlineJobKind, runOfflineJob } from '#shared/monitoring/evaluate.ts';
import { type EventLogJob, eventLogJobKind, judgeEventLogItems } from '#shared/monitoring/event-log-items.ts';
import {
  type ConnectionHeartbeatJob,
  connectionHeartbeatKind,
  runConnectionHeartbeats,
} from '#shared/monitoring/heartbeat-message.ts';
import { escalate, notifyAfterWindow, notifyAlert, renotify } from '#shared/notifications/notify.ts';
import { attemptNotification, sendDigest } from '#shared/notifications/send.ts';
import { countMetric } from '#shared/observability/metrics.ts';
import { type SnapshotJob, snapshotJobKind, takeDailySnapshot } from '#shared/patching/compliance.ts';
import {
  type DeliverJob,
  deliverInstalls,
  dispatchInstalls,
  type OccurrenceJob as PatchOccurrenceJob,
  deliverJobKind as patchDeliverJobKind,
  dispatchJobKind as patchDispatchJobKind,
  occurrenceJobKind as patchOccurrenceJobKind,
  runOccurrenceJob,
} from '#shared/patching/install.ts';
import { type DeviceEvent, deviceEventKind, deviceEventsKind, zonesChangedKind } from '#shared/queue/device-events.ts';
import type { Job } from '#shared/queue/work-queue.ts';
import { deliverPendingItems } from '#shared/scripts/dispatch.ts';

/** A spooled audit row to replay (shared/audit/spool.ts). */
export type AuditReplayJob = Job & { spoolId: string; row: AuditRowInput };

/**
 * The background jobs by kind, each run on the application's database: the work queue carries jobs without knowing
 * them, and this table (read by the queue worker in AWS, the local gateways here) runs them.
 */
const jobs: Record<string, (job: Job) => Promise<unknown>> = {
  'script-runs.deliver': (job) =>
    deliverPendingItems(appDb(), job as Job & { deviceId: string; connectionId: string; attempt: number }),
  'psa.deliver': (job) => attemptDelivery(appDb(), (job as Job & { deliveryId: string }).deliveryId),
  'audit.replay': (job) => replayQueuedAuditRow(appDb(), job as AuditReplayJob),
  // Notifications: an alert change told to its channels, one attempt of a notification, a channel's digest, an
  // escalation step.
  'notifications.alert': (job) => notifyAlert(appDb(), job as Job & Parameters<typeof notifyAlert>[1]),
  'notifications.deliver': (job) =>
    attemptNotification(appDb(), (job as Job & { notificationId: string }).notificationId),
  'notifications.digest': (job) => sendDigest(appDb(), (job as Job & { channelId: string }).channelId),
  'notifications.escalate': (job) => escalate(appDb(), job as Job & Parameters<typeof escalate>[1]),
  // Armed by a new alert whose rule renotifies, and by each reminder: its channels again while nobody acts on it.
  'notifications.renotify': (job) => renotify(appDb(), job as Job & Parameters<typeof renotify>[1]),
  // A maintenance window's occurrence starts; it ends, and the alerts it held back that still fire are told.
  'maintenance.start': (job) => startOccurrence(appDb(), job as Job & StartJob),
  'maintenance.end': (job) =>
    endOccurrence(appDb(), job as Job & EndJob, (windowId) => notifyAfterWindow(appDb(), windowId)),
  // Automations: an occurrence of a schedule trigger; a device event told by the write that caused it; a site's zone
  // changed (device-local schedules armed in it); an item that waited for its device's previous run of the automation.
  [occurrenceJobKind]: (job) => runOccurrence(appDb(), job as Job & OccurrenceJob),
  [deviceEventKind]: (job) => runDeviceEvent(appDb(), job as Job & DeviceEvent),
  [deviceEventsKind]: async (job) => {
    await runDeviceEvents(appDb(), (job as Job & { events: DeviceEvent[] }).events);
  },
  [zonesChangedKind]: (job) => {
    const { orgId, zone } = job as Job & { orgId: string; zone: string };
    return armNewZone(appDb(), orgId, zone);
  },
  [dequeueJobKind]: (job) =>
    runQueuedItem(appDb(), job as Job & { itemId: string; automationId: string; deviceId: string }),
  // Armed by a seal that failed after its change committed: seals every intent still waiting.
  'audit.seal': () => sealWaitingIntents(appDb()),
  // Armed by a history import's commit (and by itself while rows wait): the lane's rows moved into the searchable trail.
  [historyMoveJobKind]: async () => {
    await runHistoryMove(appDb());
  },
  // Armed by a raise that requested a ticket, before its commit: numbers the partner's tickets left waiting.
  [numberTicketsJobKind]: (job) => runNumberTicketsJob(appDb(), job as Job & NumberTicketsJob),
  // Armed by an agent's $disconnect for when its grace is over: device.offline unless it came back.
  [presenceJobKind]: (job) => runPresenceJob(appDb(), job as Job & PresenceJob),
  // A heartbeat carried by an agent's connection (the heartbeat queue's; its worker runs them in batches).
  [connectionHeartbeatKind]: async (job) => {
    if ((await runConnectionHeartbeats(appDb(), [job as ConnectionHeartbeatJob])).length > 0)
      throw new Error('A heartbeat could not be recorded');
  },
  // Armed by a heartbeat (or a $disconnect) for when an offline monitor is due: judges it against the device's last heartbeat.
  [offlineJobKind]: (job) => runOfflineJob(appDb(), job as OfflineJob),
  // Armed by a firing event-log monitor for when its oldest counted event leaves the window: judges it again.
  [eventLogJobKind]: (job) => judgeEventLogItems(appDb(), (job as EventLogJob).deviceId, (job as EventLogJob).itemKey),
  // Patching: a ring's occurrence (armed by the schedule engine), installs waiting for an agent that just connected,
  // an organization's daily compliance counts (armed by the day's first scan).
  [patchOccurrenceJobKind]: (job) => runOccurrenceJob(appDb(), job as Job & PatchOccurrenceJob),
  [patchDeliverJobKind]: (job) => deliverInstalls(appDb(), job as Job & DeliverJob),
  [patchDispatchJobKind]: (job) => dispatchInstalls(appDb(), job as Job & { jobId: string }),
  [snapshotJobKind]: (job) => takeDailySnapshot(appDb(), job as Job & SnapshotJob),
  // Armed by the writes that seal an organization's rows: its audit streams deliver them.
  [deliverJobKind]: (job) => deliverOrganization(appDb(), (job as Job & { orgId: string }).orgId),
  // Armed by the daily integrity watch when it has no time left for the day's stripes of older rows: verified on the
  // audit-admin connection (as the watch verifies); a break is logged and counted for the alarm, not retried.
  [stripeJobKind]: async (job) => {
    const failure = await verifyStripeJob(auditAdminDb(), job as Job & StripeJob);
    if (failure) countMetric('AuditChainBreaks', 1);
  },
};

/** Runs one background job (shared/queue/work-queue.ts); a kind no domain declares is an error. */
export async function runJob(job: Job): Promise<void> {
  const run = jobs[job.kind];
  if (!run) throw new Error(`No background job of kind ${job.kind}`);
  await run(job);
}

/**
 * Runs the device events of one batch of the queue worker together: the automations they trigger are read and fired
 * once for all of them (shared/automations/events.ts), so devices coming online at once cost a few statements a batch.
 */
export async function runDeviceEventJobs(events: Job[]): Promise<void> {
  const kinds = new Set(events.map((job) => job.kind));
  if (kinds.size !== 1 || !kinds.has(deviceEventKind)) throw new Error('Not a batch of device events');
  await runDeviceEvents(appDb(), events as (Job & DeviceEvent)[]);
}

/** The kinds whose jobs a worker runs together, one batch a receive (runJobBatch). */
export const batchedJobKinds = [connectionHeartbeatKind] as const;

/**
 * Runs the jobs of batched kinds of one receive together: heartbeats carried by agents' connections are recorded for
 * all their devices in a few statements (shared/monitoring/heartbeat-message.ts). Answers the jobs that failed.
 */
export async function runJobBatch(batch: Job[]): Promise<Job[]> {
  const heartbeats = batch.filter((job) => job.kind === connectionHeartbeatKind) as ConnectionHeartbeatJob[];
  const others = batch.filter((job) => job.kind !== connectionHeartbeatKind);
  if (others.length > 0) throw new Error(`Not batched: ${others.map((job) => job.kind).join(', ')}`);
  return heartbeats.length > 0 ? runConnectionHeartbeats(appDb(), heartbeats) : [];
}
