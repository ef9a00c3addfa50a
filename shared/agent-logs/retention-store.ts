import { type Db, one } from '../db/db.ts';
import { defaultLogRetention } from './schemas.ts';

/** The days an organization set, when it set them (migration 0095). */
export interface LogRetentionRow {
  agentLogDays: number;
  eventLogDays: number;
}

/** The organization's row; `lock` holds it until commit, so concurrent saves record their own before values. */
export function selectLogRetention(db: Db, orgId: string, lock = false) {
  return one<LogRetentionRow & Record<string, unknown>>(
    db,
    `SELECT agent_log_days AS "agentLogDays", event_log_days AS "eventLogDays"
       FROM log_retention_policies WHERE org_id = :orgId::uuid${lock ? ' FOR UPDATE' : ''}`,
    { orgId },
  );
}

/** Saves both values (the caller filled a missing one from the values in force). */
export async function upsertLogRetention(
  db: Db,
  orgId: string,
  days: LogRetentionRow,
  updatedBy: string | null,
): Promise<LogRetentionRow> {
  const row = await one<LogRetentionRow & Record<string, unknown>>(
    db,
    `INSERT INTO log_retention_policies AS p (org_id, agent_log_days, event_log_days, updated_by)
     VALUES (:orgId::uuid, :agentLogDays::int, :eventLogDays::int, :updatedBy::uuid)
     ON CONFLICT (org_id) DO UPDATE SET
        agent_log_days = excluded.agent_log_days, event_log_days = excluded.event_log_days,
        updated_at = now(), updated_by = excluded.updated_by
     RETURNING agent_log_days AS "agentLogDays", event_log_days AS "eventLogDays"`,
    { orgId, ...days, updatedBy },
  );
  return row!;
}

/** The two log tables the daily run prunes, each by its own timestamp. */
export const prunedLogs = {
  agent_logs: { days: 'agent_log_days', defaultDays: defaultLogRetention.agentLogDays },
  device_event_logs: { days: 'event_log_days', defaultDays: defaultLogRetention.eventLogDays },
} as const;
export type PrunedLog = keyof typeof prunedLogs;

/** An organization with expired rows in at least one log table, and the cutoff of each table. */
export interface ExpiredLogs {
  orgId: string;
  orgName: string;
  cutoffs: { table: PrunedLog; days: number; cutoff: Date }[];
}

/**
 * The organizations holding rows older than their window in either table, with each table's window and cutoff (taken
 * once, so one run deletes up to one instant). One probe per organization and table down (org_id, timestamp).
 */
export async function selectExpiredLogs(db: Db, asOf: Date): Promise<ExpiredLogs[]> {
  const tables = Object.entries(prunedLogs) as [PrunedLog, (typeof prunedLogs)[PrunedLog]][];
  const { rows } = await db.query<{ orgId: string; orgName: string; table: PrunedLog; days: number; cutoff: Date }>(
    `WITH windows AS (
       SELECT o.id, o.name,
              ${tables.map(([table, t]) => `coalesce(p.${t.days}, ${t.defaultDays}) AS "${table}"`).join(', ')}
         FROM organizations o LEFT JOIN log_retention_policies p ON p.org_id = o.id
     )
     ${tables
       .map(
         ([table]) => `SELECT w.id::text AS "orgId", w.name AS "orgName", '${table}' AS "table", w."${table}" AS days,
              :asOf::timestamptz - w."${table}" * interval '1 day' AS cutoff
         FROM windows w
        WHERE EXISTS (SELECT 1 FROM ${table} x
                       WHERE x.org_id = w.id AND x.timestamp < :asOf::timestamptz - w."${table}" * interval '1 day')`,
       )
       .join('\n     UNION ALL\n     ')}
     ORDER BY 1, 3`,
    { asOf },
  );
  const byOrg = new Map<string, ExpiredLogs>();
  for (const row of rows) {
    const org = byOrg.get(row.orgId) ?? { orgId: row.orgId, orgName: row.orgName, cutoffs: [] };
    org.cutoffs.push({ table: row.table, days: row.days, cutoff: new Date(row.cutoff) });
    byOrg.set(row.orgId, org);
  }
  return [...byOrg.values()];
}

/** Deletes at most `batch` rows of the organization older than `cutoff`: how many. */
export async function deleteExpiredBatch(
  db: Db,
  table: PrunedLog,
  orgId: string,
  cutoff: Date,
  batch: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ${table} WHERE ctid IN (
       SELECT x.ctid FROM ${table} x WHERE x.org_id = :orgId::uuid AND x.timestamp < :cutoff::timestamptz LIMIT :batch::int)`,
    { orgId, cutoff, batch },
  );
  return rowCount;
}
