import type { KeyObject } from 'node:crypto';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { anchorKeyId, signCheckpoint } from './anchor-signing.ts';
import {
  type Cut,
  countOrganizationsWithoutPolicy,
  deleteExpiredBatch,
  type RetentionTarget,
  recordCleanup,
  selectExpiredPrefix,
  selectRetentionTargets,
} from './retention-store.ts';
import { writeAuditEvent, zeroUuid } from './writer.ts';

/** The action of the worker's own audit event; its category is `system` (no category prefix matches). */
export const retentionAction = 'system.audit.retention';

/** Rows deleted per transaction: a first run over millions of rows never holds one long transaction or its locks. */
export const defaultBatchRows = 5_000;

export interface PruneOptions {
  /** The moment the windows are evaluated at (default: now); recorded in the audit event and each signed cut. */
  asOf?: Date;
  /** Report what would be deleted, per organization, and write nothing at all. */
  dryRun?: boolean;
  batchRows?: number;
  /** Called (and awaited) after each batch and after each organization. */
  onProgress?: (progress: RetentionProgress) => void | Promise<void>;
  /** Stops the run between batches (a server shutting down); what was cut so far is still audited. */
  signal?: AbortSignal;
  /** Signs each cut's checkpoint; without it nothing is cut: an organization with expired rows fails. */
  signingKey?: KeyObject;
}

export interface RetentionProgress {
  organizations: number;
  organizationsDone: number;
  /** Rows deleted so far (in a dry run: rows that would be). */
  rowsDeleted: number;
}

/** What the run did (or, in a dry run, would do) to one organization with a policy. */
export interface OrganizationRetention {
  orgId: string;
  orgName: string;
  retentionDays: number;
  /** Rows timestamped before it were older than the window. */
  cutoff: string;
  rowsDeleted: number;
  /** The first and last chain positions cut; null when nothing was. */
  fromSeq: number | null;
  throughSeq: number | null;
  /** Why this organization could not be pruned (the run goes on with the others). */
  error?: string;
}

export interface PruneRun {
  asOf: string;
  dryRun: boolean;
  /** Every organization with a policy, in id order. */
  organizations: OrganizationRetention[];
  /** Organizations without a policy, skipped (their rows accumulate until one is saved). */
  skipped: number;
  rowsDeleted: number;
  /** Organizations that could not be pruned (their `error` says why). */
  failed: number;
  /** The run was stopped by its signal: organizations may be left uncut, or cut only in part. */
  stopped: boolean;
}

/**
 * Retention proper (docs/retention.md): per organization with a policy, deletes
 * the contiguous oldest segment of audit rows older than retentionDays before `asOf` (a prefix cut by seq: a younger
 * row stops it), in batches of `batchRows` rows each in its own transaction, each cut signed; records
 * last_cleanup_at; and writes one `system.audit.retention` event per organization it pruned. `db` is the audit-admin
 * connection; a repeated run finds nothing more to delete.
 */
export async function pruneExpiredRows(db: Db, options: PruneOptions = {}): Promise<PruneRun> {
  const asOf = options.asOf ?? new Date();
  const dryRun = options.dryRun ?? false;
  const batchRows = options.batchRows ?? defaultBatchRows;
  const targets = await selectRetentionTargets(db, asOf);
  const run: PruneRun = {
    asOf: asOf.toISOString(),
    dryRun,
    organizations: [],
    skipped: await countOrganizationsWithoutPolicy(db),
    rowsDeleted: 0,
    failed: 0,
    stopped: false,
  };
  const report = () =>
    options.onProgress?.({
      organizations: targets.length,
      organizationsDone: run.organizations.length,
      rowsDeleted: run.rowsDeleted,
    });

  for (const target of targets) {
    if (options.signal?.aborted) break;
    const done: OrganizationRetention = {
      orgId: target.orgId,
      orgName: target.orgName,
      retentionDays: target.retentionDays,
      cutoff: target.cutoff.toISOString(),
      rowsDeleted: 0,
      fromSeq: null,
      throughSeq: null,
    };
    try {
      if (dryRun) {
        const prefix = await selectExpiredPrefix(db, target.orgId, target.cutoff);
        Object.assign(done, { rowsDeleted: prefix.rows, fromSeq: prefix.fromSeq, throughSeq: prefix.throughSeq });
        run.rowsDeleted += prefix.rows;
      } else {
        await pruneOrganization(db, target, done, {
          asOf: run.asOf,
          batchRows,
          signal: options.signal,
          sign: cutSigner(target, run.asOf, options.signingKey),
          onBatch: (rows) => {
            run.rowsDeleted += rows;
            return report();
          },
        });
      }
    } catch (error) {
      done.error = error instanceof Error ? error.message : String(error);
      run.failed += 1;
      logger.error('[retention] Failed to prune the audit trail of an organization', {
        orgId: target.orgId,
        error: done.error,
      });
    }
    run.organizations.push(done);
    await report();
  }
  run.stopped = options.signal?.aborted ?? false;
  return run;
}

/** Signs a cut of the target's policy as of `asOf`; refuses to cut at all without a key. */
function cutSigner(target: RetentionTarget, asOf: string, key: KeyObject | undefined) {
  return (cut: Cut) => {
    if (!key)
      throw new Error('AUDIT_ANCHOR_PRIVATE_KEY is not set: a retention cut is made only when it can be signed');
    const fields = { ...cut, retentionDays: target.retentionDays, asOf, keyId: anchorKeyId(key) };
    return { ...fields, signature: signCheckpoint(fields, key) };
  };
}

/** Cuts one organization's expired prefix batch by batch, audits the cut, then records the cleanup. */
async function pruneOrganization(
  db: Db,
  target: RetentionTarget,
  done: OrganizationRetention,
  options: {
    asOf: string;
    batchRows: number;
    signal?: AbortSignal;
    sign: (cut: Cut) => ReturnType<ReturnType<typeof cutSigner>>;
    onBatch: (rows: number) => void | Promise<void>;
  },
): Promise<void> {
  let complete = false;
  let failure: unknown;
  try {
    while (!options.signal?.aborted) {
      const batch = await deleteExpiredBatch(
        db,
        target.orgId,
        target.cutoff,
        options.batchRows,
        done.throughSeq,
        options.sign,
      );
      if (batch.rows > 0) {
        done.rowsDeleted += batch.rows;
        done.fromSeq ??= batch.fromSeq;
        done.throughSeq = batch.throughSeq;
        await options.onBatch(batch.rows);
      }
      // A short batch met the first row inside the window, or the end of the chain.
      if (batch.rows < options.batchRows) {
        complete = true;
        break;
      }
    }
  } catch (error) {
    failure = error;
  }
  // Whatever stopped the cut, the rows already deleted are accounted for in the trail.
  if (done.rowsDeleted > 0) {
    await writeAuditEvent(
      { db, pending: [] },
      {
        orgId: target.orgId,
        actorType: 'system',
        actorId: zeroUuid,
        action: retentionAction,
        resourceType: 'organization',
        resourceId: target.orgId,
        resourceName: target.orgName,
        details: {
          rowsDeleted: done.rowsDeleted,
          fromSeq: done.fromSeq,
          throughSeq: done.throughSeq,
          retentionDays: target.retentionDays,
          cutoff: done.cutoff,
          asOf: options.asOf,
          dryRun: false,
        },
      },
    );
  }
  if (failure !== undefined) throw failure;
  if (complete) await recordCleanup(db, target.orgId);
}
