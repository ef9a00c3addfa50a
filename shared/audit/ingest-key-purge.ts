import type { Db } from '../db/db.ts';
import type { IdempotencyTable } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { deleteStaleIngestKeys } from './retention-store.ts';

/**
 * Idempotency keys answer retries for 24 hours (shared/db/idempotency.ts); they are deleted an hour later,
 * so a key never disappears between the two statements of the request that finds it still fresh.
 */
export const ingestKeyLifetimeMs = 25 * 60 * 60 * 1000;

/** The API's idempotency keys and those of spooled audit rows share the lifetime. */
const keyTables: readonly IdempotencyTable[] = ['audit_ingest_requests', 'idempotency_keys'];

/** Deletes the stale ingestion keys batch by batch; a failure is logged, not fatal to the run. */
export async function purgeIngestKeys(db: Db, before: Date, batchRows: number, signal?: AbortSignal): Promise<number> {
  let deleted = 0;
  try {
    for (const table of keyTables) {
      while (!signal?.aborted) {
        const rows = await deleteStaleIngestKeys(db, table, before, batchRows);
        deleted += rows;
        if (rows < batchRows) break;
      }
    }
  } catch (error) {
    logger.error('[retention] Failed to delete stale ingestion idempotency keys', {
      error: error instanceof Error ? error.message : String(error),
    });
  }
  return deleted;
}
