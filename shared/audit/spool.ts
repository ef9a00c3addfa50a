/**
 * The durable audit spool: an audit write that fails after the request succeeded (an audit write never fails
 * its request) is not dropped but kept, with the instant it happened, and replayed later. The store is
 * the deployment's: locally a file under .data/ (infra/local/audit-file-spool.ts), replayed on start and every
 * minute; in AWS (WORK_QUEUE_URL set) an `audit.replay` job of the work queue, which its worker inserts once only
 * however often SQS delivers it. A replayed row keeps its original timestamp; its seq is where the replay appends
 * it, so it is later than the timestamp suggests (the chain order stays insertion order).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/db.ts';
import { onceForKey, requestHash } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
import { send } from '../queue/work-queue.ts';
import { type AuditRowInput, insertAuditRows } from './store.ts';

/** Where failed audit rows are kept until replayed. */
export interface AuditSpool {
  /** Keeps the row durably; rejects when it could not. */
  put(row: AuditRowInput): Promise<void>;
}

let configured: AuditSpool | undefined;

/** Sets (or, with undefined, removes) the process's spool; without one a failed write is only logged and counted. */
export function useAuditSpool(spool: AuditSpool | undefined): void {
  configured = spool;
}

/** The work queue as the spool (AWS): one message per row, with an id by which its replay happens once. */
const queueSpool: AuditSpool = {
  put: (row) => send({ kind: 'audit.replay', spoolId: randomUUID(), row, dueAt: Date.now() }),
};

/** The process's spool: the one set, else the work queue when there is one (WORK_QUEUE_URL, in Lambda). */
function currentSpool(): AuditSpool | undefined {
  return configured ?? (process.env.WORK_QUEUE_URL ? queueSpool : undefined);
}

/** Keeps a row whose write failed; counts it spooled, or permanently failed when it could not be kept. */
export async function spoolAuditRow(row: AuditRowInput): Promise<void> {
  const spool = currentSpool();
  if (!spool) {
    countMetric('AuditEventsFailedPermanently');
    return;
  }
  try {
    await spool.put(row);
    countMetric('AuditEventsSpooled');
  } catch (error) {
    countMetric('AuditEventsFailedPermanently');
    logger.error('[audit] Could not spool a failed audit write; the event is lost', {
      action: row.action,
      orgId: row.orgId,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Appends spooled rows (each with its original timestamp) in one statement; counts them replayed. */
export async function replayAuditRows(db: Db, rows: AuditRowInput[]): Promise<void> {
  if (rows.length === 0) return;
  await insertAuditRows(db, rows);
  countMetric('AuditEventsReplayed', rows.length);
}

/**
 * Appends one row spooled to the work queue, once: its spool id is claimed in audit ingestion's idempotency table in
 * the transaction that appends it, so a message SQS delivers twice (or receives again after a lost delete) adds
 * nothing the second time. Counts it replayed when this call appended it.
 */
export async function replayQueuedAuditRow(db: Db, job: { spoolId: string; row: AuditRowInput }): Promise<void> {
  let appended = false;
  const claim = {
    principalType: 'audit_spool',
    principalId: job.spoolId,
    key: 'replay',
    requestHash: requestHash(job.row),
  };
  await db.transaction((tx) =>
    onceForKey(tx, 'audit_ingest_requests', claim, async () => {
      const [sealed] = await insertAuditRows(tx, [job.row]);
      appended = true;
      return { id: sealed!.id };
    }),
  );
  if (appended) countMetric('AuditEventsReplayed');
}

/** A spooled row whose last replay failed: SQS moves its message to the dead-letter queue, where it waits for a redrive. */
export function auditReplayAbandoned(job: { spoolId: string; row: AuditRowInput }, error: unknown): void {
  countMetric('AuditEventsFailedPermanently');
  logger.error('[audit] A spooled audit event failed its last replay; it waits in the dead-letter queue', {
    spoolId: job.spoolId,
    action: job.row.action,
    orgId: job.row.orgId,
    error: error instanceof Error ? error.message : String(error),
  });
}
