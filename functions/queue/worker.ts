/**
 * The work queue's Lambda (infra/aws/work-queue.ts): each SQS message is one job of shared/queue/work-queue.ts.
 * A job not due yet (SQS delays a message by 15 minutes at most) is sent on with the delay left; a job that throws
 * is reported as a batch item failure, received again later, and after five receives kept in the dead-letter queue
 * (a spooled audit row failing its last receive is counted AuditEventsFailedPermanently).
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { auditReplayAbandoned } from '#shared/audit/spool.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { appDb } from '#shared/db/client.ts';
import { logger } from '#shared/logger.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { deviceEventKind } from '#shared/queue/device-events.ts';
import { maxReceives, type QueuedJob, send } from '#shared/queue/work-queue.ts';
import { loadSecretSettings } from '#shared/secrets-manager.ts';
import { type AuditReplayJob, batchedJobKinds, runDeviceEventJobs, runJob, runJobBatch } from './jobs.ts';

// PSA deliveries open the integration's sealed secret to sign; read from Secrets Manager at cold start.
await loadSecretSettings(['ENROLLMENT_KEY_SEAL_KEY']);

/** When this instance last swept the audit intents: at most once a minute, and only when there is work. */
let sweptAt = 0;
const sweepEveryMs = 60_000;

/**
 * Seals the audit intents a process left behind between a change's commit and its seal (a Lambda that timed out or
 * lost its database there): the worker runs only when there is work, so this costs nothing while the stack is idle.
 */
async function sweepAuditIntents(): Promise<void> {
  if (Date.now() - sweptAt < sweepEveryMs) return;
  sweptAt = Date.now();
  await sealWaitingIntents(appDb()).catch((error: unknown) =>
    logger.error('[audit] Could not seal the waiting audit intents', { error: String(error) }),
  );
}

export const handler = observedHandler(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  await sweepAuditIntents();
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  // The batch's device events due now are evaluated together once the other jobs ran.
  const events: { messageId: string; job: QueuedJob }[] = [];
  // Jobs of batched kinds (heartbeats of agents' connections) run together once the others ran.
  const batched: { messageId: string; job: QueuedJob }[] = [];
  for (const record of event.Records) {
    let job: QueuedJob | undefined;
    try {
      job = JSON.parse(record.body) as QueuedJob;
      if (job.dueAt > Date.now() + 1_000) await send(job);
      else if (job.kind === deviceEventKind) events.push({ messageId: record.messageId, job });
      else if ((batchedJobKinds as readonly string[]).includes(job.kind))
        batched.push({ messageId: record.messageId, job });
      else await runJob(job);
    } catch (error) {
      logger.error('A work queue job failed', { messageId: record.messageId, error: String(error) });
      batchItemFailures.push({ itemIdentifier: record.messageId });
      const lastReceive = Number(record.attributes?.ApproximateReceiveCount) >= maxReceives;
      if (job?.kind === 'audit.replay' && lastReceive) auditReplayAbandoned(job as QueuedJob & AuditReplayJob, error);
    }
  }
  if (events.length > 0)
    await runDeviceEventJobs(events.map((each) => each.job)).catch((error: unknown) => {
      // Received again, each event runs what it did not run (its runs are keyed by the event).
      logger.error('Device events of a work queue batch failed', { count: events.length, error: String(error) });
      for (const each of events) batchItemFailures.push({ itemIdentifier: each.messageId });
    });
  if (batched.length > 0) {
    const failed = await runJobBatch(batched.map((each) => each.job)).catch((error: unknown) => {
      logger.error('Jobs of a work queue batch failed', { count: batched.length, error: String(error) });
      return batched.map((each) => each.job);
    });
    for (const each of batched)
      if (failed.includes(each.job)) batchItemFailures.push({ itemIdentifier: each.messageId });
  }
  return { batchItemFailures };
});
