import type { z } from 'zod';
import { type AuditContext, auditChange, writeAuditEvent, zeroUuid } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import {
  deleteExpiredBatch,
  type LogRetentionRow,
  type PrunedLog,
  selectExpiredLogs,
  selectLogRetention,
  upsertLogRetention,
} from './retention-store.ts';
import { defaultLogRetention, type updateLogRetention as updateSchema } from './schemas.ts';

/** The values in force and whether they were set; without a row, the defaults. */
function retentionOf(row: LogRetentionRow | undefined) {
  return row
    ? { agentLogDays: row.agentLogDays, eventLogDays: row.eventLogDays, configured: true }
    : { ...defaultLogRetention, configured: false };
}

/** How long the organization's logs are kept: whoever may read its logs (logs:read) may read it. */
export async function getLogRetention(db: Db, principal: Principal, orgId: string) {
  await reachableOrganization(db, principal, orgId, 'logs:read');
  return retentionOf(await selectLogRetention(db, orgId));
}

/**
 * Sets it (logs:manage: partner and organization administrators); a field left out keeps the value in force.
 * Audited as log_retention.update with both values before and after, in the transaction that saves them.
 */
export async function updateLogRetention(
  db: Db,
  principal: Principal,
  orgId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'logs:manage');
  const saved = await db.transaction(async (tx) => {
    const before = retentionOf(await selectLogRetention(tx, orgId, true));
    const after = await upsertLogRetention(
      tx,
      orgId,
      {
        agentLogDays: change.agentLogDays ?? before.agentLogDays,
        eventLogDays: change.eventLogDays ?? before.eventLogDays,
      },
      principal.id,
    );
    await auditChange(tx, audit, {
      orgId,
      action: 'log_retention.update',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: org.name,
      details: {
        before: { agentLogDays: before.agentLogDays, eventLogDays: before.eventLogDays, configured: before.configured },
        after: { agentLogDays: after.agentLogDays, eventLogDays: after.eventLogDays, configured: true },
      },
    });
    return after;
  });
  return retentionOf(saved);
}

/** The audit action of a table's summary row. */
const pruneAction: Record<PrunedLog, string> = {
  agent_logs: 'agent_logs.prune',
  device_event_logs: 'device_event_logs.prune',
};

/** Rows one statement deletes: a short lock, a bounded transaction, a few MB of WAL. */
const pruneBatchRows = 5_000;

export interface LogPruneRun {
  agentLogsDeleted: number;
  eventLogsDeleted: number;
  /** Organizations and tables where something was deleted. */
  pruned: { orgId: string; table: PrunedLog; count: number }[];
  /** Organizations and tables whose deletion failed (logged); the others were pruned all the same. */
  failed: number;
  /** The signal stopped the run between batches: the next run goes on. */
  stopped: boolean;
}

/**
 * The daily run's pruning of agent diagnostic logs and device event logs (docs/retention.md "Agent and event logs"):
 * for each organization, the rows whose own timestamp is older than its window (30 and 90 days unless set), in batches
 * of pruneBatchRows until none is left or `signal` stops it. Each organization and table where it deleted something
 * gets one `<table>.prune` audit row (actor system) with the count, written even when the run stops or fails midway
 * for what it did delete. `db` is the audit-admin connection (logbook_audit_admin).
 */
export async function pruneExpiredLogs(
  db: Db,
  options: { asOf?: Date; signal?: AbortSignal; batchRows?: number } = {},
): Promise<LogPruneRun> {
  const asOf = options.asOf ?? new Date();
  const batch = options.batchRows ?? pruneBatchRows;
  const run: LogPruneRun = { agentLogsDeleted: 0, eventLogsDeleted: 0, pruned: [], failed: 0, stopped: false };
  for (const org of await selectExpiredLogs(db, asOf)) {
    for (const { table, days, cutoff } of org.cutoffs) {
      let count = 0;
      try {
        for (;;) {
          if (options.signal?.aborted) {
            run.stopped = true;
            break;
          }
          const deleted = await deleteExpiredBatch(db, table, org.orgId, cutoff, batch);
          count += deleted;
          if (deleted < batch) break;
        }
      } catch (error) {
        run.failed += 1;
        logger.error('[retention] Could not prune the logs of an organization', {
          orgId: org.orgId,
          table,
          error: String(error),
        });
      }
      if (count > 0) {
        await writeAuditEvent(
          { db, pending: [] },
          {
            orgId: org.orgId,
            actorType: 'system',
            actorId: zeroUuid,
            action: pruneAction[table],
            resourceType: 'organization',
            resourceId: org.orgId,
            resourceName: org.orgName,
            details: { count, retentionDays: days, cutoff: cutoff.toISOString() },
          },
        );
        run.pruned.push({ orgId: org.orgId, table, count });
        if (table === 'agent_logs') run.agentLogsDeleted += count;
        else run.eventLogsDeleted += count;
      }
      if (run.stopped) return run;
    }
  }
  return run;
}
