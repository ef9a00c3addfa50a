/**
 * The work queue's Lambda (infra/aws/work-queue.ts): each SQS message is one job of shared/queue/work-queue.ts.
 * A job not due yet (SQS delays a message by 15 minutes at most) is sent on with the delay left; a job that throws
 * is reported as a batch item failure, received again later, and after five receives kept in the dead-letter queue
 * (a spooled audit row failing its last receive is counted AuditEventsFailedPermanently).
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { auditReplayAbandoned } from '#shared/audit/spool.ts';
import { logger } from '#shared/logger.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { maxReceives, type QueuedJob, send } from '#shared/queue/work-queue.ts';
import { loadSecretSettings } from '#shared/secrets-manager.ts';
import { type AuditReplayJob, runJob } from './jobs.ts';

// PSA deliveries open the integration's sealed secret to sign; read from Secrets Manager at cold start.
await loadSecretSettings(['ENROLLMENT_KEY_SEAL_KEY']);

export const handler = observedHandler(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    let job: QueuedJob | undefined;
    try {
      job = JSON.parse(record.body) as QueuedJob;
      if (job.dueAt > Date.now() + 1_000) await send(job);
      else await runJob(job);
    } catch (error) {
      logger.error('A work queue job failed', { messageId: record.messageId, error: String(error) });
      batchItemFailures.push({ itemIdentifier: record.messageId });
      const lastReceive = Number(record.attributes?.ApproximateReceiveCount) >= maxReceives;
      if (job?.kind === 'audit.replay' && lastReceive) auditReplayAbandoned(job as QueuedJob & AuditReplayJob, error);
    }
  }
  return { batchItemFailures };
});
