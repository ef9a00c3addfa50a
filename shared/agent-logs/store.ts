import { clampedTimestampSql, jsonWithOriginalTimestampSql } from '../agents/clock-skew.ts';
import type { IngestCharge, Reservation } from '../agents/store.ts';
import { ingestChargeSql, reservationColumns } from '../agents/store.ts';
import { type Db, one, type Params } from '../db/db.ts';
import { keyClaimSql } from '../db/idempotency.ts';
import { likePattern } from '../db/like-pattern.ts';
import type { Page } from '../db/page.ts';
import { pagination } from '../db/paging.ts';
import { streamKeysSql } from '../db/stream-keys.ts';
import { asUtc } from '../instants.ts';
import type { LogEntry, LogLevel } from './schemas.ts';

/** The entries as the JSON parameter :rows the inserts expand with jsonb_to_recordset. */
const logRows = (entries: readonly LogEntry[]) =>
  entries.map((e, n) => ({
    n: n + 1,
    timestamp: e.timestamp,
    at: asUtc(e.timestamp),
    level: e.level,
    component: e.component,
    message: e.message,
    fields: e.fields ?? {},
    agentVersion: e.agentVersion ?? null,
  }));

/**
 * The INSERT of the entries :rows of the device (:deviceId, :orgId) where `gate` holds, after the CTE `keys`
 * (streamKeysSql). The agent_logs_count trigger adds the rows to agent_log_counts in the same statement.
 */
const insertLogsSql = (
  gate = 'true',
) => `INSERT INTO agent_logs (device_id, org_id, timestamp, level, component, message, fields, agent_version, stream_seq)
     SELECT :deviceId::uuid, :orgId::uuid, ${clampedTimestampSql}, r.level::agent_log_level, r.component, r.message,
            ${jsonWithOriginalTimestampSql('r.fields')}, r."agentVersion", keys.base - r.n
       FROM jsonb_to_recordset(:rows::jsonb)
         AS r(n int, "timestamp" text, at text, level text, component text, message text, fields jsonb, "agentVersion" text)
       LEFT JOIN keys ON true
      WHERE ${gate}`;

/**
 * One batch as one multi-row INSERT: the entries travel as one JSON parameter expanded
 * by jsonb_to_recordset. One statement, so a batch is stored whole or not at all.
 */
export async function insertLogBatch(
  db: Db,
  device: { id: string; orgId: string },
  entries: readonly LogEntry[],
): Promise<number> {
  const { rowCount } = await db.query(`WITH ${streamKeysSql('agent-logs')} ${insertLogsSql()}`, {
    deviceId: device.id,
    orgId: device.orgId,
    rows: logRows(entries),
  });
  return rowCount;
}

/** What insertChargedLogs answers: the charge's Reservation, entries stored, and the key's claim (keyClaimSql). */
type ChargedLogs = Reservation & { received: number; locked: boolean; claimed: boolean };

/**
 * A whole upload as one statement, so stored whole or not at all without a transaction around it: the charge to the
 * device's hourly budget (ingestChargeSql), then the entries only when charged; with `claim` (a keyed request's
 * parameters of keyClaimSql), the charge only when the key's lock is taken, and the key's row with its reply only when
 * charged.
 */
export async function insertChargedLogs(
  db: Db,
  charge: IngestCharge,
  entries: readonly LogEntry[],
  claim?: Params,
): Promise<ChargedLogs> {
  const key = claim && keyClaimSql('EXISTS (SELECT FROM reserved)');
  const row = await one<ChargedLogs & Record<string, unknown>>(
    db,
    `WITH ${key ? `${key.lock},` : ''} ${ingestChargeSql(key ? '(SELECT locked FROM key_lock)' : 'true')},
     ${key ? `${key.row},` : ''} ${streamKeysSql('agent-logs')},
     stored AS (${insertLogsSql('EXISTS (SELECT FROM reserved)')} RETURNING 1)
     SELECT ${reservationColumns}, (SELECT count(*) FROM stored)::int AS received,
            ${key ? key.columns : 'true AS locked, false AS claimed'}
       FROM budget b LEFT JOIN reserved r ON true`,
    { ...charge, ...claim, rows: logRows(entries) },
  );
  return row!;
}

export interface DiagnosticLogFilter {
  level?: string[];
  component?: string;
  since?: string;
  until?: string;
  search?: string;
}

type DiagnosticLogRow = {
  id: string;
  deviceId: string;
  orgId: string;
  timestamp: Date;
  level: LogLevel;
  component: string;
  message: string;
  fields: Record<string, unknown>;
  agentVersion: string | null;
  createdAt: Date;
};

const columns = `l.id, l.device_id AS "deviceId", l.org_id AS "orgId", l.timestamp, l.level, l.component, l.message, l.fields,
  l.agent_version AS "agentVersion", l.created_at AS "createdAt"`;

/** The filters other than time, over agent_logs `l` or agent_log_counts `l` (same column names). */
const filterSql = (table: 'rows' | 'counts') => `l.device_id = :deviceId::uuid
  AND (:levels::text IS NULL OR l.level = ANY (string_to_array(:levels::text, ',')::agent_log_level[]))
  AND (:component::text IS NULL OR l.component = :component::text)
  ${table === 'rows' ? 'AND (:search::text IS NULL OR l.message ILIKE :search::text)' : ''}`;

const inRange = 'l.timestamp >= :since::timestamptz AND l.timestamp <= :until::timestamptz';

const hour = 3_600_000;

/**
 * The hours a total may take whole from agent_log_counts: [fullFrom, fullTo), both on the hour and
 * inside [since, until]: fullFrom the hour after the one holding `since`, fullTo the hour holding
 * `until` (from millisecond-truncated instants, which only ever narrows the range). Without a whole hour
 * in the range, or with a search (the counts know no messages), both are `until` and every row is
 * counted. Computed here, so the planner sees the bounds as constants and ranges the index with them.
 */
function wholeHours(filter: DiagnosticLogFilter, until: string): { fullFrom: string; fullTo: string } {
  const none = { fullFrom: until, fullTo: until };
  if (filter.search) return none;
  const from = filter.since === undefined ? undefined : Math.floor(Date.parse(filter.since) / hour) * hour + hour;
  const to = filter.until === undefined ? undefined : Math.floor(Date.parse(filter.until) / hour) * hour;
  if (from !== undefined && to !== undefined && from >= to) return none;
  return {
    fullFrom: from === undefined ? '-infinity' : new Date(from).toISOString(),
    fullTo: to === undefined ? 'infinity' : new Date(to).toISOString(),
  };
}

/**
 * A page of the device's entries, newest first, and the total under the filters: whole hours
 * from agent_log_counts plus the rows of the partial hours at both ends, counted off the device's
 * (device_id, timestamp) index.
 */
export async function selectDiagnosticLogs(db: Db, deviceId: string, filter: DiagnosticLogFilter, page: Page) {
  const params = {
    deviceId,
    levels: filter.level?.join(',') ?? null,
    component: filter.component ?? null,
    search: filter.search ? likePattern(filter.search) : null,
    since: filter.since ?? '-infinity',
    until: filter.until ?? 'infinity',
  };
  const [{ rows: counted }, { rows }] = await Promise.all([
    db.query<{ total: number }>(
      `SELECT (SELECT COALESCE(sum(l.entries), 0) FROM agent_log_counts l
                WHERE ${filterSql('counts')} AND l.hour >= :fullFrom::timestamptz AND l.hour < :fullTo::timestamptz)
            + (SELECT count(*) FROM agent_logs l WHERE ${filterSql('rows')} AND ${inRange} AND l.timestamp < :fullFrom::timestamptz)
            + (SELECT count(*) FROM agent_logs l WHERE ${filterSql('rows')} AND ${inRange} AND l.timestamp >= :fullTo::timestamptz) AS total`,
      { ...params, ...wholeHours(filter, params.until) },
    ),
    db.query<DiagnosticLogRow>(
      `SELECT ${columns} FROM agent_logs l
        WHERE ${filterSql('rows')} AND ${inRange}
        ORDER BY l.timestamp DESC, l.id DESC
        LIMIT :limit::int OFFSET :offset::int`,
      { ...params, limit: page.limit, offset: (page.page - 1) * page.limit },
    ),
  ]);
  return { data: rows, pagination: pagination(page.page, page.limit, Number(counted[0]!.total)) };
}
