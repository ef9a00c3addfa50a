/**
 * The retention worker's Lambda, run daily by EventBridge, connected with the
 * audit-admin credentials only. A scheduled event carries no input; a manual invocation may pass
 * `{ "dryRun": true, "asOf": "<ISO 8601>" }` for a rehearsal. Fails (for the function's error metric and alarm)
 * when an organization could not be pruned; the others are pruned all the same. In AWS the integrity watch's
 * signing key comes from its secret (AUDIT_ANCHOR_PRIVATE_KEY_ARN), read once per cold start by this function alone.
 * It also takes the jobs of older rows the integrity watch queues when one run cannot verify them (its own SQS queue,
 * INTEGRITY_QUEUE_URL; shared/audit/watch-plan.ts): a break found is logged and counted, a job that fails is retried.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { z } from 'zod';
import { pruneExpiredLogs } from '#shared/agent-logs/retention.ts';
import { configuredAnchorKey } from '#shared/audit/anchor-signing.ts';
import { useAnchorWitness } from '#shared/audit/anchor-witness.ts';
import { runIntegrityWatch, verifyStripeJob } from '#shared/audit/integrity-watch.ts';
import { runRetention } from '#shared/audit/retention.ts';
import type { StripeJob } from '#shared/audit/watch-plan.ts';
import { configuredWitness } from '#shared/audit-streams/witness.ts';
import { auditAdminDb } from '#shared/db/client.ts';
import { logger } from '#shared/logger.ts';
import { pruneMonitoringData } from '#shared/monitoring/store.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { countMetric } from '#shared/observability/metrics.ts';
import { loadSecretSettings } from '#shared/secrets-manager.ts';

await loadSecretSettings(['AUDIT_ANCHOR_PRIVATE_KEY']);
// Each anchor is also published to the outside witness (AUDIT_WITNESS: the Object Lock bucket of the stack).
useAnchorWitness(configuredWitness({ streams: Boolean(process.env.WORK_QUEUE_URL) }));

const invocation = z.object({
  dryRun: z.boolean().optional(),
  asOf: z.iso.datetime({ offset: true }).optional(),
  // The anchor schedule (anchorIntervalMinutes): the integrity watch alone, anchoring and witnessing every intact head.
  anchorOnly: z.boolean().optional(),
});

/** Stop starting batches this long before Lambda's deadline, so the cut so far is audited before the environment is frozen. */
const deadlineMarginMs = 60_000;

/** The integrity watch between daily runs: fails (for the error alarm) when a chain is broken or contradicts its witness. */
async function anchorOnly() {
  const key = configuredAnchorKey();
  if (!key) throw new Error('AUDIT_ANCHOR_PRIVATE_KEY is not set: no anchor can be written');
  // The rows written since each newest anchor; the day's stripes of older rows are the daily run's.
  const run = await runIntegrityWatch(auditAdminDb(), key, { stripes: false });
  countMetric('AuditAnchorsWritten', run.anchors.length);
  countMetric('AuditChainBreaks', run.failures.length);
  logger.info('[retention] Anchors taken', { anchored: run.anchors.length, broken: run.failures.length });
  if (run.failures.length > 0)
    throw new Error(
      `audit chain integrity: ${run.failures.map((f) => `${f.orgId}: seq ${f.seq}, kind ${f.kind}`).join('; ')}`,
    );
  return { anchored: run.anchors.length };
}

/** Jobs of older rows from the integrity watch's queue, one at a time; a job that throws is received again later. */
async function integrityJobs(event: SQSEvent): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      const failure = await verifyStripeJob(auditAdminDb(), JSON.parse(record.body) as StripeJob);
      countMetric('AuditChainBreaks', failure ? 1 : 0);
    } catch (error) {
      logger.error('[retention] A job of older audit rows failed', {
        messageId: record.messageId,
        error: String(error),
      });
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}

const isQueueEvent = (event: unknown): event is SQSEvent =>
  typeof event === 'object' && event !== null && Array.isArray((event as { Records?: unknown }).Records);

export const handler = observedHandler(async (event: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>) => {
  if (isQueueEvent(event)) return integrityJobs(event);
  const input = invocation.parse(event ?? {});
  if (input.anchorOnly) return anchorOnly();
  const budgetMs = context ? context.getRemainingTimeInMillis() - deadlineMarginMs : undefined;
  // Already inside the margin: stopped before the first batch, not after a timer tick.
  const signal =
    budgetMs === undefined ? undefined : budgetMs <= 0 ? AbortSignal.abort() : AbortSignal.timeout(budgetMs);
  const run = await runRetention(auditAdminDb(), {
    dryRun: input.dryRun,
    asOf: input.asOf === undefined ? undefined : new Date(input.asOf),
    signal,
  });
  // Monitoring samples and check results past their organization's retention go in the same daily run.
  const monitoringRowsDeleted = run.dryRun || run.stopped ? 0 : await pruneMonitoringData(auditAdminDb(), signal);
  // And agent diagnostic logs and device event logs past their organization's windows (30 and 90 days by default).
  const logs =
    run.dryRun || run.stopped || signal?.aborted
      ? { agentLogsDeleted: 0, eventLogsDeleted: 0, pruned: [], failed: 0, stopped: false }
      : await pruneExpiredLogs(auditAdminDb(), { signal });
  const pruned = run.organizations.filter((org) => org.rowsDeleted > 0);
  const summary = {
    asOf: run.asOf,
    dryRun: run.dryRun,
    organizations: run.organizations.length,
    pruned: pruned.length,
    rowsDeleted: run.rowsDeleted,
    failed: run.failed,
    stopped: run.stopped,
    monitoringRowsDeleted,
    agentLogsDeleted: logs.agentLogsDeleted,
    eventLogsDeleted: logs.eventLogsDeleted,
    logPruneFailures: logs.failed,
  };
  logger.info('[retention] Run finished', {
    ...summary,
    cuts: pruned.map(({ orgId, rowsDeleted, throughSeq }) => ({ orgId, rowsDeleted, throughSeq })),
  });
  // A first run over a very large backlog may not fit one invocation; every batch committed, so the next run goes on.
  if (run.stopped) logger.warn('[retention] Stopped before the Lambda deadline; the next run continues the cut');
  if (run.integrity)
    logger.info('[retention] Integrity watch finished', {
      organizations: run.integrity.organizations,
      anchored: run.integrity.anchors.length,
      broken: run.integrity.failures.length,
    });
  // Each break was logged by the watch (organization, seq, kind); the invocation fails for the error metric and alarm.
  const broken = run.integrity?.failures ?? [];
  if (!run.dryRun) {
    countMetric('AuditRowsPruned', run.rowsDeleted);
    countMetric('AuditRetentionFailures', run.failed);
    countMetric('AuditAnchorsWritten', run.integrity?.anchors.length ?? 0);
    countMetric('AuditChainBreaks', broken.length);
  }
  if (logs.failed > 0)
    throw new Error(`log retention failed for ${logs.failed} organization(s) and log type(s); see the logged errors`);
  if (run.failed > 0)
    throw new Error(
      `retention failed for ${run.failed} organization(s): ${run.organizations
        .filter((org) => org.error)
        .map((org) => `${org.orgId}: ${org.error}`)
        .join('; ')}`,
    );
  if (broken.length > 0)
    throw new Error(
      `audit chain integrity: ${broken.map((f) => `${f.orgId}: seq ${f.seq}, kind ${f.kind}: ${f.meaning}`).join('; ')}`,
    );
  return summary;
});
