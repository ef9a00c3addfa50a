import type { Role } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, ownedRowTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { MappedSeverity, RunItemStatus, ScriptDefinition, ScriptParameter, UpdateScript } from './schemas.ts';

export type ScriptRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  description: string;
  language: ScriptDefinition['language'];
  osTypes: ScriptDefinition['osTypes'];
  parameters: ScriptParameter[];
  timeoutSeconds: number;
  runAs: ScriptDefinition['runAs'];
  exitCodeSeverityMapping: ScriptDefinition['exitCodeSeverityMapping'];
  category: string | null;
  tags: string[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
};

const scriptColumns = `s.id, s.partner_id AS "partnerId", s.org_id AS "orgId",
  CASE WHEN s.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability,
  s.name, s.description, s.language, s.os_types AS "osTypes", s.parameters, s.timeout_seconds AS "timeoutSeconds",
  s.run_as AS "runAs", s.exit_code_severity_mapping AS "exitCodeSeverityMapping", s.category, s.tags, s.version,
  s.created_at AS "createdAt", s.updated_at AS "updatedAt"`;

/**
 * The scripts a principal reaches: every one for the platform, the partner's own and its organizations' for a
 * partner user, and for an organization's caller its organization's plus the partner scripts. An organization's script leaves with its organization.
 */
const reachableScript = ownedRowTenantSql('s');

export function selectScript(db: Db, principal: Principal, id: string) {
  return one<ScriptRow>(db, `SELECT ${scriptColumns} FROM scripts s WHERE s.id = :id::uuid AND ${reachableScript}`, {
    id,
    ...tenantParams(principal),
  });
}

export function selectScripts(
  db: Db,
  principal: Principal,
  filter: { orgId?: string; availability?: string; language?: string; category?: string; search?: string },
  page: Page,
) {
  return selectPage<ScriptRow>(
    db,
    scriptColumns,
    `scripts s WHERE ${reachableScript}
       AND (:orgId::uuid IS NULL OR s.org_id = :orgId::uuid
            OR (s.org_id IS NULL AND s.partner_id = (SELECT partner_id FROM organizations WHERE id = :orgId::uuid)))
       AND (:availability::text IS NULL OR (s.org_id IS NULL) = (:availability::text = 'partner'))
       AND (:language::text IS NULL OR s.language = :language::text)
       AND (:category::text IS NULL OR lower(s.category) = lower(:category::text))
       AND (:search::text IS NULL OR s.name ILIKE :search::text)`,
    'lower(s.name), s.id',
    {
      ...tenantParams(principal),
      orgId: filter.orgId ?? null,
      availability: filter.availability ?? null,
      language: filter.language ?? null,
      category: filter.category ?? null,
      search: filter.search ?? null,
    },
    page,
  );
}

/** The live scripts of one library (an organization's, or the partner's when orgId is null) with these names. */
export async function selectScriptsByName(
  db: Db,
  library: { partnerId: string; orgId: string | null },
  names: string[],
): Promise<{ id: string; name: string; version: number }[]> {
  const { rows } = await db.query<{ id: string; name: string; version: number }>(
    `SELECT s.id, s.name, s.version FROM scripts s
      WHERE s.partner_id = :partnerId::uuid AND s.org_id IS NOT DISTINCT FROM :orgId::uuid AND s.deleted_at IS NULL
        AND lower(s.name) IN (SELECT lower(n) FROM jsonb_array_elements_text(:names::jsonb) AS n)`,
    { ...library, names },
  );
  return rows;
}

/** Whether a live script of this name exists in the library (other than `exceptId`). */
export async function scriptNameTaken(
  db: Db,
  library: { partnerId: string; orgId: string | null },
  name: string,
  exceptId: string | null = null,
): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 AS taken FROM scripts s
      WHERE s.partner_id = :partnerId::uuid AND s.org_id IS NOT DISTINCT FROM :orgId::uuid AND s.deleted_at IS NULL
        AND lower(s.name) = lower(:name::text) AND s.id IS DISTINCT FROM :exceptId::uuid`,
    { ...library, name, exceptId },
  );
  return row !== undefined;
}

/** A new script at version 1, and that version. */
export async function insertScript(
  db: Db,
  script: ScriptDefinition & { partnerId: string; orgId: string | null; createdBy: string | null },
): Promise<ScriptRow> {
  const row = await one<ScriptRow>(
    db,
    `WITH s AS (
       INSERT INTO scripts (partner_id, org_id, name, description, language, os_types, category, tags, run_as,
                            timeout_seconds, exit_code_severity_mapping, content, parameters, created_by)
       VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :description::text, :language::text, :osTypes::jsonb,
               :category::text, :tags::jsonb, :runAs::text, :timeoutSeconds::int, :mapping::jsonb, :content::text,
               :parameters::jsonb, :createdBy::uuid)
       RETURNING *),
     v AS (
       INSERT INTO script_versions (script_id, version, language, content, parameters, created_by)
       SELECT id, 1, language, content, parameters, created_by FROM s)
     SELECT ${scriptColumns} FROM s`,
    {
      partnerId: script.partnerId,
      orgId: script.orgId,
      name: script.name,
      description: script.description,
      language: script.language,
      osTypes: script.osTypes,
      category: script.category,
      tags: script.tags,
      runAs: script.runAs,
      timeoutSeconds: script.timeoutSeconds,
      mapping: script.exitCodeSeverityMapping,
      content: script.content,
      parameters: script.parameters,
      createdBy: script.createdBy,
    },
  );
  return row!;
}

/**
 * Changes a script; a change of language, content or parameters makes the next version. Undefined fields stay as they are.
 */
export async function updateScriptRow(
  db: Db,
  id: string,
  change: UpdateScript,
  newVersion: boolean,
  changedBy: string | null,
): Promise<ScriptRow> {
  const row = await one<ScriptRow>(
    db,
    `WITH s AS (
       UPDATE scripts SET
         name = coalesce(:name::text, name),
         description = coalesce(:description::text, description),
         language = coalesce(:language::text, language),
         os_types = coalesce(:osTypes::jsonb, os_types),
         content = coalesce(:content::text, content),
         parameters = coalesce(:parameters::jsonb, parameters),
         timeout_seconds = coalesce(:timeoutSeconds::int, timeout_seconds),
         run_as = coalesce(:runAs::text, run_as),
         exit_code_severity_mapping = CASE WHEN :setMapping::boolean THEN :mapping::jsonb ELSE exit_code_severity_mapping END,
         category = CASE WHEN :setCategory::boolean THEN :category::text ELSE category END,
         tags = coalesce(:tags::jsonb, tags),
         version = version + CASE WHEN :newVersion::boolean THEN 1 ELSE 0 END,
         updated_at = now()
       WHERE id = :id::uuid AND deleted_at IS NULL
       RETURNING *),
     v AS (
       INSERT INTO script_versions (script_id, version, language, content, parameters, created_by)
       SELECT id, version, language, content, parameters, :changedBy::uuid FROM s WHERE :newVersion::boolean)
     SELECT ${scriptColumns} FROM s`,
    {
      id,
      name: change.name,
      description: change.description,
      language: change.language,
      osTypes: change.osTypes,
      content: change.content,
      parameters: change.parameters,
      timeoutSeconds: change.timeoutSeconds,
      runAs: change.runAs,
      setMapping: change.exitCodeSeverityMapping !== undefined,
      mapping: change.exitCodeSeverityMapping ?? null,
      setCategory: change.category !== undefined,
      category: change.category ?? null,
      tags: change.tags,
      newVersion,
      changedBy,
    },
  );
  return row!;
}

export async function softDeleteScript(db: Db, id: string): Promise<void> {
  await db.query('UPDATE scripts SET deleted_at = now() WHERE id = :id::uuid AND deleted_at IS NULL', { id });
}

type VersionRow = {
  version: number;
  language: ScriptDefinition['language'];
  parameters: ScriptParameter[];
  createdBy: string | null;
  createdAt: Date;
};

export function selectScriptVersions(db: Db, scriptId: string, page: Page) {
  return selectPage<VersionRow>(
    db,
    `v.version, v.language, v.parameters, v.created_by AS "createdBy", v.created_at AS "createdAt"`,
    'script_versions v WHERE v.script_id = :scriptId::uuid',
    'v.version DESC',
    { scriptId },
    page,
  );
}

/**
 * The Data API returns at most 64 KB per row and 1 MiB per call: a version's content (up to 256 KB) is read in
 * slices of 8,000 characters (at most 32 KB of UTF-8), 24 slices a call.
 */
const sliceChars = 8_000;
const slicesPerRead = 24;

export async function selectVersionContent(db: Db, scriptId: string, version: number): Promise<string> {
  let text = '';
  let after = 0;
  for (;;) {
    const { rows } = await db.query<{ at: number; part: string }>(
      `SELECT s.at, substr(v.content, s.at, ${sliceChars}) AS part
         FROM script_versions v
        CROSS JOIN LATERAL generate_series(1, greatest(length(v.content), 1), ${sliceChars}) AS s (at)
        WHERE v.script_id = :scriptId::uuid AND v.version = :version::int AND s.at > :after::int
        ORDER BY s.at
        LIMIT ${slicesPerRead}`,
      { scriptId, version, after },
    );
    for (const row of rows) text += row.part;
    if (rows.length < slicesPerRead) return text;
    after = rows[rows.length - 1]!.at;
  }
}

// Runs

/** The live devices among `ids` that the principal reaches, with their organization's partner. */
export async function selectRunDevices(db: Db, principal: Principal, ids: string[]) {
  const { rows } = await db.query<{ id: string; orgId: string; partnerId: string; hostname: string }>(
    `SELECT d.id, d.org_id AS "orgId", o.partner_id AS "partnerId", d.hostname
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.id IN (SELECT (value #>> '{}')::uuid FROM jsonb_array_elements(:ids::jsonb))
        AND d.deleted_at IS NULL AND ${orgTenantSql('o')}`,
    { ids, ...tenantParams(principal) },
  );
  return rows;
}

export type RunActor = {
  actorType: 'user' | 'api_key';
  id: string;
  email: string | null;
  name: string | null;
  role: Role;
};

/** A run and one pending item per device, expiring after `pendingHours`; secret values kept apart until delivered. */
export async function insertRun(
  db: Db,
  run: {
    partnerId: string;
    scriptId: string;
    scriptVersion: number;
    parameters: Record<string, unknown>;
    secrets: Record<string, unknown> | null;
    timeoutSeconds: number;
    startedBy: RunActor;
    devices: { deviceId: string; orgId: string }[];
    pendingHours: number;
  },
): Promise<string> {
  return db.transaction(async (tx) => {
    const created = await one<{ id: string }>(
      tx,
      `INSERT INTO script_runs (partner_id, script_id, script_version, parameters, timeout_seconds, started_by)
       VALUES (:partnerId::uuid, :scriptId::uuid, :scriptVersion::int, :parameters::jsonb, :timeoutSeconds::int, :startedBy::jsonb)
       RETURNING id`,
      {
        partnerId: run.partnerId,
        scriptId: run.scriptId,
        scriptVersion: run.scriptVersion,
        parameters: run.parameters,
        timeoutSeconds: run.timeoutSeconds,
        startedBy: { ...run.startedBy },
      },
    );
    const runId = created!.id;
    await tx.query(
      `INSERT INTO script_run_items (run_id, device_id, org_id, status, expires_at)
       SELECT :runId::uuid, x."deviceId", x."orgId", 'pending', now() + :pendingHours::int * interval '1 hour'
         FROM jsonb_to_recordset(:devices::jsonb) AS x ("deviceId" uuid, "orgId" uuid)`,
      { runId, devices: run.devices, pendingHours: run.pendingHours },
    );
    if (run.secrets)
      await tx.query('INSERT INTO script_run_secrets (run_id, values) VALUES (:runId::uuid, :secrets::jsonb)', {
        runId,
        secrets: run.secrets,
      });
    return runId;
  });
}

export type ClaimedItem = {
  runItemId: string;
  connectionId: string;
  runId: string;
  scriptId: string;
  scriptVersion: number;
  language: string;
  runAs: string;
  timeoutSeconds: number;
  parameters: Record<string, string | number | boolean>;
  secrets: Record<string, string | number | boolean> | null;
};

/**
 * Marks items `sent` on their device's live connection and returns what their messages need. Either a run's
 * pending items (dispatch), or a device's on its new connection (`$connect`): its pending items, and those sent on
 * an earlier connection that never reported `started`. The conditional update makes each item go out once even when
 * a dispatch and a connect race.
 */
export async function claimItems(
  db: Db,
  target: { runId: string } | { deviceId: string; connectionId: string },
  graceSeconds: number,
): Promise<ClaimedItem[]> {
  const byRun = 'runId' in target;
  const { rows } = await db.query<ClaimedItem>(
    `WITH claimed AS (
       UPDATE script_run_items i
          SET status = 'sent', connection_id = c.connection_id, sent_at = now(),
              deadline_at = now() + (r.timeout_seconds + :graceSeconds::int) * interval '1 second'
         FROM agent_connections c, script_runs r
        WHERE c.device_id = i.device_id AND r.id = i.run_id
          AND (:runId::uuid IS NULL OR i.run_id = :runId::uuid)
          AND (:deviceId::uuid IS NULL OR (i.device_id = :deviceId::uuid AND c.connection_id = :connectionId::text))
          AND ((i.status = 'pending' AND i.expires_at > now())
               OR (:deviceId::uuid IS NOT NULL AND i.status = 'sent' AND i.connection_id IS DISTINCT FROM c.connection_id))
        RETURNING i.id, i.run_id, i.connection_id)
     SELECT claimed.id AS "runItemId", claimed.connection_id AS "connectionId", r.id AS "runId",
            r.script_id AS "scriptId", r.script_version AS "scriptVersion", v.language, s.run_as AS "runAs",
            r.timeout_seconds AS "timeoutSeconds", r.parameters, sec.values AS secrets
       FROM claimed
       JOIN script_runs r ON r.id = claimed.run_id
       JOIN scripts s ON s.id = r.script_id
       JOIN script_versions v ON v.script_id = r.script_id AND v.version = r.script_version
       LEFT JOIN script_run_secrets sec ON sec.run_id = r.id`,
    {
      runId: byRun ? target.runId : null,
      deviceId: byRun ? null : target.deviceId,
      connectionId: byRun ? null : target.connectionId,
      graceSeconds,
    },
  );
  return rows;
}

/** An item whose connection API Gateway called gone waits again for its agent. */
export async function unclaimItem(db: Db, runItemId: string, connectionId: string): Promise<void> {
  await db.query(
    `UPDATE script_run_items SET status = 'pending', connection_id = NULL, sent_at = NULL, deadline_at = NULL
      WHERE id = :runItemId::uuid AND status = 'sent' AND connection_id = :connectionId::text`,
    { runItemId, connectionId },
  );
}

/** Secret values are forgotten once no item of the run waits to be delivered (again). */
export async function deleteDeliveredSecrets(db: Db, runIds: string[]): Promise<void> {
  await db.query(
    `DELETE FROM script_run_secrets sec
      WHERE sec.run_id IN (SELECT (value #>> '{}')::uuid FROM jsonb_array_elements(:runIds::jsonb))
        AND NOT EXISTS (SELECT 1 FROM script_run_items i WHERE i.run_id = sec.run_id AND i.status IN ('pending', 'sent'))`,
    { runIds },
  );
}

/** Run items of organizations the principal reaches. */
const itemTenantSql = `EXISTS (SELECT 1 FROM organizations o WHERE o.id = i.org_id AND ${orgTenantSql('o')})`;

/** A run; `counts` names only the statuses some item has. */
type RunRow = {
  id: string;
  scriptId: string;
  scriptName: string;
  scriptVersion: number;
  parameters: Record<string, unknown>;
  timeoutSeconds: number;
  startedBy: RunActor;
  createdAt: Date;
  counts: Partial<Record<RunItemStatus, number>>;
};

export async function selectRun(db: Db, principal: Principal, runId: string) {
  return one<RunRow>(
    db,
    `SELECT r.id, r.script_id AS "scriptId", s.name AS "scriptName", r.script_version AS "scriptVersion", r.parameters,
            r.timeout_seconds AS "timeoutSeconds", r.started_by AS "startedBy", r.created_at AS "createdAt", counts.counts
       FROM script_runs r
       JOIN scripts s ON s.id = r.script_id
      CROSS JOIN LATERAL (
        SELECT jsonb_object_agg(status, n) AS counts
          FROM (SELECT i.status, count(*) AS n FROM script_run_items i
                 WHERE i.run_id = r.id AND ${itemTenantSql} GROUP BY i.status) g) counts
      WHERE r.id = :runId::uuid AND counts.counts IS NOT NULL`,
    { runId, ...tenantParams(principal) },
  );
}

const itemColumns = `i.id, i.run_id AS "runId", i.device_id AS "deviceId", i.org_id AS "orgId", d.hostname, i.status,
  i.expires_at AS "expiresAt", i.sent_at AS "sentAt", i.started_at AS "startedAt", i.finished_at AS "finishedAt",
  i.exit_code AS "exitCode", i.duration_ms AS "durationMs", i.stdout, i.stderr, i.stdout_truncated AS "stdoutTruncated",
  i.stderr_truncated AS "stderrTruncated", i.error`;

type RunItemRow = {
  id: string;
  runId: string;
  deviceId: string;
  orgId: string;
  hostname: string;
  status: RunItemStatus;
  expiresAt: Date;
  sentAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  exitCode: number | null;
  durationMs: number | null;
  stdout: string | null;
  stderr: string | null;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  error: { code: string; message: string } | null;
};

export function selectRunItems(db: Db, principal: Principal, runId: string, filter: { status?: string }, page: Page) {
  return selectPage<RunItemRow>(
    db,
    itemColumns,
    `script_run_items i JOIN devices d ON d.id = i.device_id
      WHERE i.run_id = :runId::uuid AND ${itemTenantSql} AND (:status::text IS NULL OR i.status = :status::text)`,
    'd.hostname, i.id',
    { runId, status: filter.status ?? null, ...tenantParams(principal) },
    page,
  );
}

/** Cancels the run's pending items in organizations the principal reaches; returns how many. */
export async function cancelPendingItems(db: Db, principal: Principal, runId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE script_run_items i SET status = 'cancelled', finished_at = now()
      WHERE i.run_id = :runId::uuid AND i.status = 'pending' AND ${itemTenantSql}`,
    { runId, ...tenantParams(principal) },
  );
  return rowCount;
}

/** The agent reports `started`: only for an item of the connection's own device. */
export async function markItemRunning(db: Db, runItemId: string, connectionId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE script_run_items i SET status = 'running', started_at = now()
       FROM agent_connections c
      WHERE i.id = :runItemId::uuid AND c.connection_id = :connectionId::text AND c.device_id = i.device_id
        AND i.status = 'sent'`,
    { runItemId, connectionId },
  );
  return rowCount > 0;
}

/** A finished item with what its audit row and alert need. */
export type FinishedItem = {
  id: string;
  runId: string;
  deviceId: string;
  orgId: string;
  partnerId: string;
  hostname: string;
  status: 'completed' | 'failed' | 'timed-out';
  exitCode: number | null;
  durationMs: number | null;
  error: { code: string; message: string } | null;
  scriptId: string;
  scriptName: string;
  scriptVersion: number;
  mapping: Record<string, MappedSeverity> | null;
  parameters: Record<string, unknown>;
  startedBy: RunActor;
};

const finishedSelect = (cte: string) => `
  SELECT f.id, f.run_id AS "runId", f.device_id AS "deviceId", f.org_id AS "orgId", r.partner_id AS "partnerId",
         d.hostname, f.status, f.exit_code AS "exitCode", f.duration_ms AS "durationMs", f.error,
         r.script_id AS "scriptId", s.name AS "scriptName", r.script_version AS "scriptVersion",
         s.exit_code_severity_mapping AS mapping, r.parameters, r.started_by AS "startedBy"
    FROM ${cte} f
    JOIN script_runs r ON r.id = f.run_id
    JOIN scripts s ON s.id = r.script_id
    JOIN devices d ON d.id = f.device_id`;

export type ItemOutcome = {
  status: 'completed' | 'failed';
  exitCode: number | null;
  durationMs: number | null;
  stdout: string | null;
  stderr: string | null;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  error: { code: string; message: string } | null;
};

/** The agent's final answer, kept once: only for an item of the connection's device that is still sent or running. */
export function finishItem(
  db: Db,
  runItemId: string,
  connectionId: string,
  outcome: ItemOutcome,
): Promise<FinishedItem | undefined> {
  return one<FinishedItem>(
    db,
    `WITH f AS (
       UPDATE script_run_items i
          SET status = :status::text, finished_at = now(), exit_code = :exitCode::int, duration_ms = :durationMs::int,
              stdout = :stdout::text, stderr = :stderr::text, stdout_truncated = :stdoutTruncated::boolean,
              stderr_truncated = :stderrTruncated::boolean, error = :error::jsonb,
              started_at = coalesce(i.started_at, now())
         FROM agent_connections c
        WHERE i.id = :runItemId::uuid AND c.connection_id = :connectionId::text AND c.device_id = i.device_id
          AND i.status IN ('sent', 'running')
        RETURNING i.*)
     ${finishedSelect('f')}`,
    { runItemId, connectionId, ...outcome },
  );
}

/**
 * Items past their deadline become `timed-out` (returned, for their audit rows), pending items past their expiry
 * `expired`; of one run, or (runId null) of any run, up to `limit` of each.
 */
export async function sweepItems(db: Db, runId: string | null, limit: number): Promise<FinishedItem[]> {
  await db.query(
    `UPDATE script_run_items SET status = 'expired', finished_at = now()
      WHERE id IN (SELECT id FROM script_run_items
                    WHERE status = 'pending' AND expires_at <= now() AND (:runId::uuid IS NULL OR run_id = :runId::uuid)
                    LIMIT :limit::int)
        AND status = 'pending'`,
    { runId, limit },
  );
  const { rows } = await db.query<FinishedItem>(
    `WITH f AS (
       UPDATE script_run_items SET status = 'timed-out', finished_at = now(),
              error = jsonb_build_object('code', 'TIMED_OUT', 'message', 'The agent did not finish the script in time')
        WHERE id IN (SELECT id FROM script_run_items
                      WHERE status IN ('sent', 'running') AND deadline_at <= now()
                        AND (:runId::uuid IS NULL OR run_id = :runId::uuid)
                      LIMIT :limit::int)
          AND status IN ('sent', 'running')
        RETURNING *)
     ${finishedSelect('f')}`,
    { runId, limit },
  );
  return rows;
}

/**
 * Keeps one chunk of an agent's answer for an item of the connection's device that is still waiting for it, if it
 * agrees with the chunk count given first; returns how many chunks of how many are in, or undefined when ignored.
 */
export function insertItemChunk(
  db: Db,
  piece: { runItemId: string; connectionId: string; chunk: number; chunks: number; data: string },
): Promise<{ received: number; chunks: number } | undefined> {
  // The item's row stays locked to commit, so two last chunks arriving at once count each other.
  return db.transaction(async (tx) => {
    const owner = await one<{ id: string }>(
      tx,
      `UPDATE script_run_items i SET chunks = :chunks::int
         FROM agent_connections c
        WHERE i.id = :runItemId::uuid AND c.connection_id = :connectionId::text AND c.device_id = i.device_id
          AND i.status IN ('sent', 'running') AND (i.chunks IS NULL OR i.chunks = :chunks::int)
        RETURNING i.id`,
      piece,
    );
    if (!owner) return undefined;
    const row = await one<{ received: number }>(
      tx,
      `WITH kept AS (
         INSERT INTO script_run_item_chunks (run_item_id, chunk, data)
         VALUES (:runItemId::uuid, :chunk::int, :data::text)
         ON CONFLICT (run_item_id, chunk) DO NOTHING)
       SELECT count(*)::int + 1 AS received FROM script_run_item_chunks
        WHERE run_item_id = :runItemId::uuid AND chunk <> :chunk::int`,
      piece,
    );
    return { received: row!.received, chunks: piece.chunks };
  });
}

/** The chunks' data concatenated in order, read in slices (the Data API's 64 KB per row), then the chunks deleted. */
export async function takeItemChunks(db: Db, runItemId: string): Promise<string> {
  let text = '';
  let after = { chunk: -1, at: 0 };
  for (;;) {
    const { rows } = await db.query<{ chunk: number; at: number; part: string }>(
      `SELECT p.chunk, s.at, substr(p.data, s.at, ${sliceChars}) AS part
         FROM script_run_item_chunks p
        CROSS JOIN LATERAL generate_series(1, greatest(length(p.data), 1), ${sliceChars}) AS s (at)
        WHERE p.run_item_id = :runItemId::uuid AND (p.chunk, s.at) > (:afterChunk::int, :afterAt::int)
        ORDER BY p.chunk, s.at
        LIMIT ${slicesPerRead}`,
      { runItemId, afterChunk: after.chunk, afterAt: after.at },
    );
    for (const row of rows) text += row.part;
    if (rows.length < slicesPerRead) break;
    const last = rows[rows.length - 1]!;
    after = { chunk: last.chunk, at: last.at };
  }
  await db.query('DELETE FROM script_run_item_chunks WHERE run_item_id = :runItemId::uuid', { runItemId });
  return text;
}

export async function selectItemRun(db: Db, runItemId: string): Promise<string | undefined> {
  const row = await one<{ runId: string }>(
    db,
    'SELECT run_id AS "runId" FROM script_run_items WHERE id = :runItemId::uuid',
    { runItemId },
  );
  return row?.runId;
}

/** Whether items wait for the device :deviceId (pending ones, or sent ones that never started), as an SQL expression. */
export const itemsWaitingSql = `EXISTS (SELECT 1 FROM script_run_items
      WHERE device_id = :deviceId::uuid AND status IN ('pending', 'sent'))`;

export async function selectVersionParameters(db: Db, scriptId: string, version: number) {
  const row = await one<{ parameters: ScriptParameter[] }>(
    db,
    'SELECT parameters FROM script_versions WHERE script_id = :scriptId::uuid AND version = :version::int',
    { scriptId, version },
  );
  return row?.parameters;
}

/** The parameters a script stores: its own (version null) and each version's. */
export async function selectParameterSets(db: Db, scriptId: string) {
  const { rows } = await db.query<{ version: number | null; parameters: ScriptParameter[] }>(
    `SELECT NULL::int AS version, parameters FROM scripts WHERE id = :scriptId::uuid
     UNION ALL
     SELECT version, parameters FROM script_versions WHERE script_id = :scriptId::uuid`,
    { scriptId },
  );
  return rows;
}

/** Replaces one parameter set (the script's own when version is null), unless it changed since it was read. */
export async function updateParameterSet(
  db: Db,
  scriptId: string,
  version: number | null,
  before: ScriptParameter[],
  after: ScriptParameter[],
): Promise<void> {
  const params = { scriptId, version, before, after };
  if (version === null)
    await db.query(
      `UPDATE scripts SET parameters = :after::jsonb WHERE id = :scriptId::uuid AND parameters = :before::jsonb`,
      params,
    );
  else
    await db.query(
      `UPDATE script_versions SET parameters = :after::jsonb
        WHERE script_id = :scriptId::uuid AND version = :version::int AND parameters = :before::jsonb`,
      params,
    );
}
