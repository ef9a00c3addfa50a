/**
 * The durable audit spool (issue 13 item 6): an audit write that fails after the request succeeded (seed 6 rule 1
 * lets the request go on) is not dropped but kept, with the instant it happened, and replayed later. The store is
 * the deployment's: locally a file under .data/ (infra/local/audit-file-spool.ts), replayed on start and every
 * minute. A replayed row keeps its original timestamp; its seq is where the replay appends it, so it is later than
 * the timestamp suggests (the chain order stays insertion order, seed 2.2).
 */
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { countMetric } from '../observability/metrics.ts';
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

/** Keeps a row whose write failed; counts it spooled, or permanently failed when it could not be kept. */
export async function spoolAuditRow(row: AuditRowInput): Promise<void> {
  if (!configured) {
    countMetric('AuditEventsFailedPermanently');
    return;
  }
  try {
    await configured.put(row);
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
