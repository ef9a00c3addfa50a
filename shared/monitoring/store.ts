import { type Db, one, type Tx } from '../db/db.ts';
import type { MonitorStateName } from '../policies/schemas.ts';
import type { MonitorState, Sample } from './transitions.ts';

/** A state row as stored: the state machine's fields and what it belongs to. */
export type StateRow = MonitorState &
  Record<string, unknown> & {
    itemKey: string;
    policyId: string;
    policyVersion: number;
    itemType: string;
    alertId: string | null;
    armedUntil: Date | null;
  };

const stateColumns = `s.item_key AS "itemKey", s.policy_id AS "policyId", s.policy_version AS "policyVersion",
  s.item_type AS "itemType", s.state, s.since, s.condition_since AS "conditionSince", s.last_value AS "lastValue",
  s.last_evaluated_at AS "lastEvaluatedAt", s.fired_count AS "firedCount", s.resolved_count AS "resolvedCount",
  s.alert_id AS "alertId", s.armed_until AS "armedUntil"`;

/** Evaluations of one device take turns until commit, whatever carried their data. */
const deviceLock = `pg_advisory_xact_lock(hashtextextended('monitoring:' || :deviceId::text, 0))`;

export async function lockDevice(tx: Tx, deviceId: string): Promise<void> {
  await tx.query(`SELECT ${deviceLock}`, { deviceId });
}

/** The samples of :samples stored for the device :deviceId once each, after the device's lock (a CTE `l`). */
const samplesInsertSql = `INSERT INTO device_metric_samples (device_id, metric, volume, at, org_id, value)
     SELECT :deviceId::uuid, s.metric, s.volume, s.at, :orgId::uuid, s.value
       FROM l, jsonb_to_recordset(:samples::jsonb) AS s(metric text, volume text, at timestamptz, value float8)
     ON CONFLICT DO NOTHING`;

/** The check results of :results stored for the device :deviceId once each, after the device's lock (a CTE `l`). */
const resultsInsertSql = `INSERT INTO monitor_check_results (device_id, item_key, at, org_id, status, value, output)
     SELECT :deviceId::uuid, r."itemKey", r.at, :orgId::uuid, r.status, r.value, r.output
       FROM l, jsonb_to_recordset(:results::jsonb) AS r("itemKey" text, at timestamptz, status text, value float8, output text)
     ON CONFLICT DO NOTHING`;

/**
 * Stores samples once per (device, metric, volume, time), taking the device's evaluation lock first: how many were
 * new. The lock is taken in this statement, so the next one of its transaction reads states and windows written
 * before it; alone (no item watches the samples) it is its own transaction.
 */
export async function insertSamples(
  tx: Db,
  deviceId: string,
  orgId: string,
  samples: { metric: string; volume: string; at: string; value: number }[],
): Promise<number> {
  const { rowCount } = await tx.query(
    `WITH l AS (SELECT ${deviceLock})
     ${samplesInsertSql}`,
    { deviceId, orgId, samples: samples as Record<string, unknown>[] },
  );
  return rowCount;
}

/** Stores check results once per (device, item, time), under the device's evaluation lock: the ones that were new. */
export async function insertCheckResults(
  tx: Tx,
  deviceId: string,
  orgId: string,
  results: { itemKey: string; status: string; value: number | null; output: string | null; at: string }[],
) {
  const { rows } = await tx.query<{ itemKey: string; at: Date }>(
    `WITH l AS (SELECT ${deviceLock})
     ${resultsInsertSql}
     RETURNING item_key AS "itemKey", at`,
    { deviceId, orgId, results: results as Record<string, unknown>[] },
  );
  return rows;
}

/**
 * For each metric item, its state and the samples it judges from `from` (the oldest new sample's window start) to
 * `to` (the newest new sample), oldest first, in one statement.
 */
export async function selectWindows(
  db: Db,
  deviceId: string,
  items: { key: string; metric: string; volume: string | null; from: string; to: string }[],
) {
  const { rows } = await db.query<{
    key: string;
    state: StateRow | null;
    version: string | null;
    samples: Sample[] | null;
  }>(
    `SELECT i.key,
            (SELECT to_jsonb(x) FROM (SELECT ${stateColumns} FROM monitor_states s
                                       WHERE s.device_id = :deviceId::uuid AND s.item_key = i.key) x) AS state,
            (SELECT s.xmin::text FROM monitor_states s
              WHERE s.device_id = :deviceId::uuid AND s.item_key = i.key) AS version,
            (SELECT jsonb_agg(jsonb_build_object('volume', m.volume, 'value', m.value,
                                                 'at', extract(epoch FROM m.at) * 1000) ORDER BY m.at)
               FROM device_metric_samples m
              WHERE m.device_id = :deviceId::uuid AND m.metric = i.metric AND (i.volume IS NULL OR m.volume = i.volume)
                AND m.at > i."from" AND m.at <= i."to") AS samples
       FROM jsonb_to_recordset(:items::jsonb) AS i(key text, metric text, volume text, "from" timestamptz, "to" timestamptz)`,
    { deviceId, items: items as Record<string, unknown>[] },
  );
  return rows.map((row) => ({ ...row, state: row.state ? revive(row.state) : null }));
}

/**
 * Stores samples once per (device, metric, volume, time) and writes each evaluated state where its row is still the
 * version read (`version`: its xmin as text; none: no row was there), in one statement that takes the device's lock
 * for itself (no transaction holds it from the read on): how many samples were new, and the items whose state was
 * written (a state another evaluation wrote meanwhile is left as it is).
 */
export async function insertSamplesAndWriteStates(
  db: Db,
  deviceId: string,
  orgId: string,
  samples: { metric: string; volume: string; at: string; value: number }[],
  states: VersionedState[],
): Promise<{ accepted: number; writtenKeys: string[] }> {
  const row = await one<{ accepted: number; writtenKeys: string[] }>(
    db,
    `WITH l AS (SELECT ${deviceLock}),
     stored AS (${samplesInsertSql} RETURNING 1),
     ${statesWrittenIfReadSql()}
     SELECT (SELECT count(*)::int FROM stored) AS accepted,
            (SELECT coalesce(jsonb_agg(item_key), '[]') FROM written) AS "writtenKeys"`,
    {
      deviceId,
      orgId,
      samples: samples as Record<string, unknown>[],
      states: states as unknown as Record<string, unknown>[],
    },
  );
  return { accepted: row?.accepted ?? 0, writtenKeys: row?.writtenKeys ?? [] };
}

/**
 * The states of the device :deviceId with their row versions (xmin as text) for the items `keys`, and which of
 * `results` are stored already, in one statement: what a check-results upload evaluates before its write.
 */
export async function selectCheckStates(
  db: Db,
  deviceId: string,
  keys: string[],
  results: { itemKey: string; at: string }[],
) {
  const row = await one<{ states: (StateRow & { version: string })[]; stored: { itemKey: string; at: string }[] }>(
    db,
    `SELECT (SELECT coalesce(jsonb_agg(to_jsonb(x)), '[]') FROM (
              SELECT ${stateColumns}, s.xmin::text AS version FROM monitor_states s
               WHERE s.device_id = :deviceId::uuid AND s.item_key IN (SELECT jsonb_array_elements_text(:keys::jsonb))) x
            ) AS states,
            (SELECT coalesce(jsonb_agg(jsonb_build_object('itemKey', c.item_key, 'at', c.at)), '[]')
               FROM monitor_check_results c
               JOIN jsonb_to_recordset(:results::jsonb) AS r("itemKey" text, at timestamptz)
                 ON c.item_key = r."itemKey" AND c.at = r.at
              WHERE c.device_id = :deviceId::uuid) AS stored`,
    { deviceId, keys, results: results.map((r) => ({ itemKey: r.itemKey, at: r.at })) },
  );
  const states = (row?.states ?? []).map((state) => ({ ...revive(state), version: state.version }));
  return {
    states: new Map(states.map((state) => [state.itemKey, state])),
    stored: new Set((row?.stored ?? []).map((r) => `${r.itemKey}@${new Date(r.at).toISOString()}`)),
  };
}

/**
 * Stores check results once per (device, item, time) and writes each evaluated state where its row is still the
 * version read, in one statement (as insertSamplesAndWriteStates): the results that were new (`item@time`), and the
 * items whose state was written.
 */
export async function insertCheckResultsAndWriteStates(
  db: Db,
  deviceId: string,
  orgId: string,
  results: { itemKey: string; status: string; value: number | null; output: string | null; at: string }[],
  states: VersionedState[],
): Promise<{ insertedKeys: string[]; writtenKeys: string[] }> {
  const row = await one<{ inserted: { itemKey: string; at: string }[]; writtenKeys: string[] }>(
    db,
    `WITH l AS (SELECT ${deviceLock}),
     stored AS (${resultsInsertSql} RETURNING item_key, at),
     ${statesWrittenIfReadSql()}
     SELECT (SELECT coalesce(jsonb_agg(jsonb_build_object('itemKey', item_key, 'at', at)), '[]') FROM stored) AS inserted,
            (SELECT coalesce(jsonb_agg(item_key), '[]') FROM written) AS "writtenKeys"`,
    {
      deviceId,
      orgId,
      results: results as Record<string, unknown>[],
      states: states as unknown as Record<string, unknown>[],
    },
  );
  return {
    insertedKeys: (row?.inserted ?? []).map((r) => `${r.itemKey}@${new Date(r.at).toISOString()}`),
    writtenKeys: row?.writtenKeys ?? [],
  };
}

/** An evaluated state and the version of its row when read (xmin as text; none: no row was there). */
export type VersionedState = StateRow & { version: string | null };

/**
 * CTEs `expected` and `written`: the states of :states written for the device :deviceId, each only where its row is
 * still the version read (a row another evaluation wrote meanwhile, or inserted where none was, is left as it is),
 * after the device's lock (CTE `l`): an evaluation holding the lock has committed its states by then, so
 * a state it wrote after this upload's read is seen and kept.
 */
const statesWrittenIfReadSql = () => `expected AS (
       SELECT r."itemKey", r.version FROM jsonb_to_recordset(:states::jsonb) AS r("itemKey" text, version text)),
     written AS (
       ${upsertStatesSql('l, ')}
       WHERE s.xmin::text = (SELECT e.version FROM expected e WHERE e."itemKey" = s.item_key)
       RETURNING s.item_key)`;

/** Dates of a state read through to_jsonb come back as text. */
function revive(state: StateRow): StateRow {
  const date = (value: Date | string | null) => (value === null ? null : new Date(value));
  return {
    ...state,
    since: date(state.since)!,
    conditionSince: date(state.conditionSince),
    lastEvaluatedAt: date(state.lastEvaluatedAt),
    armedUntil: date(state.armedUntil),
  };
}

export async function selectStates(db: Db, deviceId: string, keys?: string[]) {
  const { rows } = await db.query<StateRow>(
    `SELECT ${stateColumns} FROM monitor_states s
      WHERE s.device_id = :deviceId::uuid AND (:keys::jsonb IS NULL OR s.item_key IN (SELECT jsonb_array_elements_text(:keys::jsonb)))
      ORDER BY s.item_key`,
    { deviceId, keys: keys ?? null },
  );
  return rows;
}

/** The offline items of the device :deviceId that are pending or firing, as an SQL expression (a JSON array of keys). */
export const offlineNotOkSql = `(SELECT coalesce(jsonb_agg(item_key), '[]') FROM monitor_states
   WHERE device_id = :deviceId::uuid AND item_type = 'offline' AND state <> 'ok')`;

/**
 * The states of :states (a JSON array of state rows) written for the device :deviceId, as an INSERT … ON CONFLICT;
 * `from`: relations its rows are also selected from (the device's lock taken first).
 */
const upsertStatesSql = (
  from = '',
) => `INSERT INTO monitor_states AS s (device_id, item_key, org_id, policy_id, policy_version, item_type, state, since,
                                      condition_since, last_value, last_evaluated_at, fired_count, resolved_count,
                                      alert_id, armed_until, updated_at)
     SELECT :deviceId::uuid, r."itemKey", :orgId::uuid, r."policyId", r."policyVersion", r."itemType", r.state, r.since,
            r."conditionSince", r."lastValue", r."lastEvaluatedAt", r."firedCount", r."resolvedCount", r."alertId",
            r."armedUntil", now()
       FROM ${from}jsonb_to_recordset(:states::jsonb) AS r("itemKey" text, "policyId" uuid, "policyVersion" int, "itemType" text,
            state text, since timestamptz, "conditionSince" timestamptz, "lastValue" float8,
            "lastEvaluatedAt" timestamptz, "firedCount" int, "resolvedCount" int, "alertId" uuid, "armedUntil" timestamptz)
     ON CONFLICT (device_id, item_key) DO UPDATE SET
        org_id = EXCLUDED.org_id, policy_id = EXCLUDED.policy_id, policy_version = EXCLUDED.policy_version,
        item_type = EXCLUDED.item_type, state = EXCLUDED.state, since = EXCLUDED.since,
        condition_since = EXCLUDED.condition_since, last_value = EXCLUDED.last_value,
        last_evaluated_at = EXCLUDED.last_evaluated_at, fired_count = EXCLUDED.fired_count,
        resolved_count = EXCLUDED.resolved_count, alert_id = EXCLUDED.alert_id, armed_until = EXCLUDED.armed_until,
        updated_at = now()`;

/** Writes the states evaluated now, in one statement. */
export async function writeStates(tx: Tx, deviceId: string, orgId: string, states: StateRow[]): Promise<void> {
  if (states.length === 0) return;
  await tx.query(upsertStatesSql(), { deviceId, orgId, states: states as unknown as Record<string, unknown>[] });
}

/**
 * Arms the offline items of a device that just heartbeated: each not armed (or armed for a time already past) is
 * armed for `minutes` from now. Returns the items armed now (their job is to be queued) and those not ok (the device
 * is back: they clear), in one statement that writes nothing when neither.
 */
export async function armOffline(
  db: Db,
  deviceId: string,
  orgId: string,
  items: { key: string; policyId: string; policyVersion: number; minutes: number }[],
) {
  const { rows } = await db.query<{ itemKey: string; state: MonitorStateName; armedUntil: Date; armed: boolean }>(
    `WITH i AS (
       SELECT * FROM jsonb_to_recordset(:items::jsonb) AS i(key text, "policyId" uuid, "policyVersion" int, minutes int)),
     due AS (
       SELECT i.*, s.state, s.armed_until, s.device_id IS NULL AS missing,
              (s.armed_until IS NULL OR s.armed_until <= now() OR s.policy_id <> i."policyId") AS to_arm
         FROM i LEFT JOIN monitor_states s ON s.device_id = :deviceId::uuid AND s.item_key = i.key
        WHERE s.device_id IS NULL OR s.armed_until IS NULL OR s.armed_until <= now() OR s.state <> 'ok'
           OR s.policy_id <> i."policyId" OR s.item_type <> 'offline'),
     up AS (
       INSERT INTO monitor_states AS s (device_id, item_key, org_id, policy_id, policy_version, item_type, state, since,
                                        armed_until)
       SELECT :deviceId::uuid, due.key, :orgId::uuid, due."policyId", due."policyVersion", 'offline', 'ok', now(),
              date_trunc('milliseconds', now() + due.minutes * interval '1 minute')
         FROM due
       ON CONFLICT (device_id, item_key) DO UPDATE SET
          armed_until = CASE WHEN s.armed_until IS NULL OR s.armed_until <= now() OR s.policy_id <> EXCLUDED.policy_id
                             THEN EXCLUDED.armed_until ELSE s.armed_until END,
          policy_id = EXCLUDED.policy_id, policy_version = EXCLUDED.policy_version, item_type = 'offline',
          state = CASE WHEN s.item_type <> 'offline' OR s.policy_id <> EXCLUDED.policy_id THEN 'ok' ELSE s.state END,
          updated_at = now()
       RETURNING s.item_key, s.state, s.armed_until)
     SELECT up.item_key AS "itemKey", up.state, up.armed_until AS "armedUntil", (due.to_arm OR due.missing) AS armed
       FROM up JOIN due ON due.key = up.item_key`,
    { deviceId, orgId, items: items as Record<string, unknown>[] },
  );
  return rows;
}

/** When the device was last seen and whether it has a live connection, if it is live. */
export function selectLastSeen(db: Db, deviceId: string) {
  return one<{ lastSeenAt: Date | null; connected: boolean; hostname: string; orgId: string; partnerId: string }>(
    db,
    `SELECT d.last_seen_at AS "lastSeenAt",
            EXISTS (SELECT 1 FROM agent_connections c WHERE c.device_id = d.id) AS connected, d.hostname, d.org_id AS "orgId", o.partner_id AS "partnerId"
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL`,
    { deviceId },
  );
}

/** A device's samples of one metric in a time range, oldest first. */
export async function selectSamples(
  db: Db,
  deviceId: string,
  metric: string,
  volume: string | null,
  from: string,
  to: string,
  limit: number,
) {
  const { rows } = await db.query<{ volume: string; value: number; timestamp: Date }>(
    `SELECT m.volume, m.value, m.at AS timestamp FROM device_metric_samples m
      WHERE m.device_id = :deviceId::uuid AND m.metric = :metric::text AND (:volume::text IS NULL OR m.volume = :volume::text)
        AND m.at >= :from::timestamptz AND m.at < :to::timestamptz
      ORDER BY m.at DESC, m.volume DESC LIMIT :limit::int`,
    { deviceId, metric, volume, from, to, limit },
  );
  return rows.reverse();
}

/** How long samples and check results are kept where an organization sets nothing. */
export const monitoringRetentionDays = 30;

/** Rows deleted per statement of the daily prune, so no statement holds a long lock or a huge WAL burst. */
const pruneBatchRows = 50_000;

/**
 * Deletes samples and check results older than each organization's monitoring retention (default 30 days), in
 * batches, until none is left or `signal` stops it: how many. Run by the daily retention run.
 */
export async function pruneMonitoringData(db: Db, signal?: AbortSignal): Promise<number> {
  let deleted = 0;
  for (const table of ['device_metric_samples', 'monitor_check_results']) {
    for (;;) {
      if (signal?.aborted) return deleted;
      const { rowCount } = await db.query(
        `DELETE FROM ${table} WHERE ctid IN (
           SELECT x.ctid FROM ${table} x JOIN organizations o ON o.id = x.org_id
            WHERE x.at < now() - coalesce(o.monitoring_retention_days, :defaultDays::int) * interval '1 day'
            LIMIT :batch::int)`,
        { defaultDays: monitoringRetentionDays, batch: pruneBatchRows },
      );
      deleted += rowCount;
      if (rowCount < pruneBatchRows) break;
    }
  }
  return deleted;
}
