import type { Metrics } from '@aws-lambda-powertools/metrics';
import { inLambda, serviceName } from './service.ts';

/**
 * What the service counts, beside what Lambda and API Gateway already measure (invocations, duration, 4xx/5xx):
 * the business events and the outcomes an operator sets alarms on. No dimension but `service`, so each is one
 * CloudWatch metric, billed only in the hours it is emitted.
 */
export type BusinessMetric =
  // shared/audit/writer.ts: a route's audit row sealed, or lost (the request still succeeds).
  | 'AuditEventsWritten'
  | 'AuditWriteFailures'
  // shared/audit/spool.ts: a failed audit write kept durably, replayed later, or lost after all.
  | 'AuditEventsSpooled'
  | 'AuditEventsReplayed'
  | 'AuditEventsFailedPermanently'
  // shared/audit/writer.ts: committed audit intents a seal after the commit missed, sealed later by the sweep.
  | 'AuditIntentsSweptLate'
  // Agent telemetry stored.
  | 'AgentLogsStored'
  | 'DeviceEventsStored'
  // Replies by error code (shared/observability/handler.ts): live-query outcomes, ingestion budgets, the database.
  | 'LiveQueryDeviceOffline'
  | 'LiveQueryTimeouts'
  | 'LiveQueryBadResponses'
  | 'IngestRateLimited'
  | 'DatabaseUnavailable'
  | 'UnhandledErrors'
  // The daily retention run (functions/retention/run.ts).
  | 'AuditRowsPruned'
  | 'AuditRetentionFailures'
  | 'AuditAnchorsWritten'
  | 'AuditChainBreaks'
  // The daily billing due run (functions/billing/run.ts).
  | 'InvoicesGenerated'
  | 'InvoicesIssued'
  | 'BillingRunFailures'
  // shared/audit-streams/delivery.ts: rows a destination took, and attempts that failed (retried from the cursor).
  | 'AuditStreamRowsDelivered'
  | 'AuditStreamDeliveryFailures';

/** What the service measures as a value, not a count (alarms take their maximum). */
export type GaugeMetric =
  // shared/audit-streams/delivery.ts: how long the oldest row a delivery sent (or failed to send) had been waiting.
  'AuditStreamLagSeconds';

/**
 * CloudWatch metrics in the embedded metric format (Powertools Metrics), written to the function's log: namespace
 * POWERTOOLS_METRICS_NAMESPACE (default `Logbook`), dimension `service`. Loaded in Lambda only: elsewhere (`npm
 * start`, tests) the package is not even imported and counting does nothing, so nothing is printed. In Lambda,
 * POWERTOOLS_METRICS_DISABLED=true still switches them off.
 */
export const metrics: Metrics | undefined = inLambda
  ? new (await import('@aws-lambda-powertools/metrics')).Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || 'Logbook',
      serviceName,
    })
  : undefined;

/** Adds `value` to a count of this invocation (published when the invocation ends). */
export function countMetric(name: BusinessMetric, value = 1): void {
  if (value > 0) metrics?.addMetric(name, 'Count', value);
}

/** Records a measured value of this invocation, in seconds. */
export function gaugeMetric(name: GaugeMetric, seconds: number): void {
  metrics?.addMetric(name, 'Seconds', seconds);
}

/** Publishes this invocation's counts; an invocation that counted nothing writes no metric line (and no warning). */
export function publishMetrics(): void {
  if (metrics?.hasStoredMetrics()) metrics.publishStoredMetrics();
}
