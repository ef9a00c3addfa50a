import { attemptDelivery } from '#shared/alerts/psa-delivery.ts';
import { replayQueuedAuditRow } from '#shared/audit/spool.ts';
import type { AuditRowInput } from '#shared/audit/store.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { deliverJobKind } from '#shared/audit-streams/arm.ts';
import { deliverOrganization } from '#shared/audit-streams/delivery.ts';
import { appDb } from '#shared/db/client.ts';
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
  // Armed by a seal that failed after its change committed: seals every intent still waiting.
  'audit.seal': () => sealWaitingIntents(appDb()),
  // Armed by the writes that seal an organization's rows: its audit streams deliver them.
  [deliverJobKind]: (job) => deliverOrganization(appDb(), (job as Job & { orgId: string }).orgId),
};

/** Runs one background job (shared/queue/work-queue.ts); a kind no domain declares is an error. */
export async function runJob(job: Job): Promise<void> {
  const run = jobs[job.kind];
  if (!run) throw new Error(`No background job of kind ${job.kind}`);
  await run(job);
}
