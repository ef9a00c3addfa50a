import type { KeyObject } from 'node:crypto';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { configuredAnchorKey } from './anchor-signing.ts';
import { armHistoryMove, movableHistoryRowsWait } from './history-lane.ts';
import { ingestKeyLifetimeMs, purgeIngestKeys } from './ingest-key-purge.ts';
import { type IntegrityWatchRun, runIntegrityWatch } from './integrity-watch.ts';
import { defaultBatchRows, type PruneOptions, type PruneRun, pruneExpiredRows } from './prune.ts';

export type { OrganizationRetention, RetentionProgress } from './prune.ts';
export { retentionAction } from './prune.ts';

export interface RetentionOptions extends Omit<PruneOptions, 'signingKey'> {
  /**
   * The key that signs each cut and each anchor (shared/audit/anchor-signing.ts); default: AUDIT_ANCHOR_PRIVATE_KEY.
   * Without one nothing is cut and the integrity watch is skipped.
   */
  anchorKey?: KeyObject;
  /** Run the integrity watch after the cuts (default true); it never runs in a dry run or a stopped run. */
  integrityWatch?: boolean;
}

export interface RetentionRun extends PruneRun {
  /** Ingestion idempotency keys past their lifetime, deleted (0 in a dry run). */
  ingestKeysDeleted: number;
  /** The integrity watch after the cuts: anchors written and breaks found; absent when it did not run. */
  integrity?: IntegrityWatchRun;
}

/**
 * The daily retention run (docs/ARCHITECTURE.md: EventBridge daily ──► functions/retention; locally the dev server's
 * timer and `npm run retention`), in order: prune each organization's expired rows (signed cuts), purge stale
 * ingestion idempotency keys, arm the move of history rows still waiting in the lane, and run the integrity watch over
 * every chain. `db` is the audit-admin connection.
 */
export async function runRetention(db: Db, options: RetentionOptions = {}): Promise<RetentionRun> {
  const { anchorKey = configuredAnchorKey(), integrityWatch = true, ...pruneOptions } = options;
  const pruned = await pruneExpiredRows(db, { ...pruneOptions, signingKey: anchorKey });
  if (pruned.dryRun || pruned.stopped) return { ...pruned, ingestKeysDeleted: 0 };

  const ingestKeysDeleted = await purgeIngestKeys(
    db,
    new Date(Date.now() - ingestKeyLifetimeMs),
    options.batchRows ?? defaultBatchRows,
    options.signal,
  );

  // History rows an import left waiting in the lane, if the job its commit armed was lost: armed again, once a day.
  if (await movableHistoryRowsWait(db)) await armHistoryMove();

  if (!integrityWatch) return { ...pruned, ingestKeysDeleted };
  if (!anchorKey) {
    logger.warn(
      '[retention] AUDIT_ANCHOR_PRIVATE_KEY is not set: the integrity watch is skipped and no anchor is written',
    );
    return { ...pruned, ingestKeysDeleted };
  }
  const integrity = await runIntegrityWatch(db, anchorKey, { anchoredAt: new Date() });
  return { ...pruned, ingestKeysDeleted, integrity };
}
