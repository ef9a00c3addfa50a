import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, ownedRowTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, type Params, prepared, type SqlValue } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { DeviceFilter } from '../device-groups/filter.ts';
import type { Guards, Trigger } from './schemas.ts';

export interface Owner {
  partnerId: string;
  orgId: string | null;
}

/** Who created or changed an automation, and whose name its scheduled script runs go out under. */
export type Actor = {
  actorType: 'user' | 'api_key';
  id: string;
  email: string | null;
  name: string | null;
  role: string;
};

/** An action as stored: a run-script action's secret parameters sealed apart. */
export type StoredAction = Record<string, unknown> & { type: string; onFailure: 'stop' | 'continue' };

export type AutomationRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  enabled: boolean;
  version: number;
  triggers: Trigger[];
  conditions: DeviceFilter | null;
  actions: StoredAction[];
  guards: Guards;
  hasWebhookSecret: boolean;
  createdBy: Actor;
  createdAt: Date;
  updatedAt: Date;
};

const columns = `a.id, a.partner_id AS "partnerId", a.org_id AS "orgId",
  CASE WHEN a.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, a.name, a.enabled, a.version,
  a.triggers, a.conditions, a.actions, a.guards, a.webhook_secret IS NOT NULL AS "hasWebhookSecret",
  a.created_by AS "createdBy", a.created_at AS "createdAt", a.updated_at AS "updatedAt"`;

/** Automations the principal reaches: a partner's for its users; an organization's own and its partner's. */
const reachable = ownedRowTenantSql('a');

export interface AutomationValues {
  name: string;
  enabled: boolean;
  triggers: Trigger[];
  conditions: DeviceFilter | null;
  actions: StoredAction[];
  guards: Guards;
}

const json = (value: unknown) => value as SqlValue;

/** An automation's values as statement parameters. */
const valueParams = (values: AutomationValues) => ({
  name: values.name,
  enabled: values.enabled,
  triggers: json(values.triggers),
  conditions: json(values.conditions),
  actions: json(values.actions),
  guards: json(values.guards),
});

async function insertVersion(db: Db, row: AutomationRow, actor: Actor): Promise<void> {
  await db.query(
    `INSERT INTO automation_versions (automation_id, version, name, enabled, triggers, conditions, actions, guards,
                                      created_by)
     VALUES (:id::uuid, :version::int, :name::text, :enabled::boolean, :triggers::jsonb, :conditions::jsonb,
             :actions::jsonb, :guards::jsonb, :actor::jsonb)`,
    { id: row.id, version: row.version, ...valueParams(row), actor: json(actor) },
  );
}

export async function insertAutomation(db: Db, owner: Owner, values: AutomationValues, actor: Actor) {
  const row = (await one<AutomationRow>(
    db,
    `INSERT INTO automations AS a (partner_id, org_id, name, enabled, triggers, conditions, actions, guards, created_by)
     VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :enabled::boolean, :triggers::jsonb, :conditions::jsonb,
             :actions::jsonb, :guards::jsonb, :actor::jsonb)
     RETURNING ${columns}`,
    { ...owner, ...valueParams(values), actor: json(actor) },
  ))!;
  await insertVersion(db, row, actor);
  return row;
}

export function selectAutomation(db: Db, principal: Principal, id: string) {
  return one<AutomationRow>(db, `SELECT ${columns} FROM automations a WHERE a.id = :id::uuid AND ${reachable}`, {
    id,
    ...tenantParams(principal),
  });
}

/** An automation as its jobs read it (no tenancy: the system acts); a deleted one is undefined. */
export function selectLiveAutomation(db: Db, id: string, lock = false) {
  return one<AutomationRow>(
    db,
    `SELECT ${columns} FROM automations a WHERE a.id = :id::uuid AND a.deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    { id },
  );
}

export function selectAutomations(db: Db, principal: Principal, orgId: string | undefined, page: Page) {
  return selectPage<AutomationRow>(
    db,
    columns,
    `automations a WHERE ${reachable} AND (:orgId::uuid IS NULL OR a.org_id IS NULL OR a.org_id = :orgId::uuid)`,
    'lower(a.name), a.id',
    { ...tenantParams(principal), orgId: orgId ?? null },
    page,
  );
}

/** A change is a new version, kept in automation_versions. */
export async function updateAutomationRow(db: Db, id: string, values: AutomationValues, actor: Actor) {
  const row = (await one<AutomationRow>(
    db,
    `UPDATE automations a SET name = :name::text, enabled = :enabled::boolean, triggers = :triggers::jsonb,
            conditions = :conditions::jsonb, actions = :actions::jsonb, guards = :guards::jsonb,
            version = version + 1, updated_at = now()
      WHERE a.id = :id::uuid AND a.deleted_at IS NULL
      RETURNING ${columns}`,
    { id, ...valueParams(values) },
  ))!;
  await insertVersion(db, row, actor);
  return row;
}

export async function softDeleteAutomation(db: Db, id: string): Promise<void> {
  await db.query(
    'UPDATE automations SET deleted_at = now(), version = version + 1, webhook_secret = NULL WHERE id = :id::uuid',
    { id },
  );
}

export function selectVersions(db: Db, id: string, page: Page) {
  return selectPage(
    db,
    `v.version, v.name, v.enabled, v.triggers, v.conditions, v.actions, v.guards, v.created_at AS "createdAt"`,
    'automation_versions v WHERE v.automation_id = :id::uuid',
    'v.version DESC',
    { id },
    page,
  );
}

export async function setWebhookSecret(db: Db, id: string, sealed: string): Promise<void> {
  await db.query('UPDATE automations SET webhook_secret = :sealed::text WHERE id = :id::uuid', { id, sealed });
}

export async function selectWebhookSecret(db: Db, id: string): Promise<string | undefined> {
  const row = await one<{ secret: string | null }>(
    db,
    'SELECT webhook_secret AS secret FROM automations WHERE id = :id::uuid AND deleted_at IS NULL',
    { id },
  );
  return row?.secret ?? undefined;
}

/** Records a webhook call's signature; false when it was seen within the replay window (a replay). */
export async function recordWebhookCall(db: Db, id: string, signature: string, windowMinutes: number) {
  await db.query(
    `DELETE FROM automation_webhook_calls
      WHERE automation_id = :id::uuid AND received_at < now() - :windowMinutes::int * interval '1 minute'`,
    { id, windowMinutes },
  );
  const row = await one(
    db,
    `INSERT INTO automation_webhook_calls (automation_id, signature) VALUES (:id::uuid, :signature::text)
     ON CONFLICT DO NOTHING RETURNING 1`,
    { id, signature },
  );
  return row !== undefined;
}

/**
 * Records zones armed for schedule triggers of versions of automations; answers those not recorded before (as
 * `<automationId>:<trigger>@<zone>`): only those are armed.
 */
export async function recordArmedZones(
  db: Db,
  armed: { automationId: string; version: number; trigger: number; zone: string }[],
): Promise<Set<string>> {
  if (armed.length === 0) return new Set();
  const { rows } = await db.query<{ key: string }>(
    `INSERT INTO automation_zones (automation_id, version, trigger, zone)
     SELECT x."automationId", x.version, x.trigger, x.zone
       FROM jsonb_to_recordset(:armed::jsonb) AS x ("automationId" uuid, version int, trigger int, zone text)
     ON CONFLICT DO NOTHING RETURNING automation_id || ':' || trigger || '@' || zone AS key`,
    { armed: json(armed) },
  );
  return new Set(rows.map((row) => row.key));
}

/** Enabled live automations reaching an organization (its own and its partner's) with a device-local schedule. */
export async function selectDeviceLocalAutomations(db: Db, orgId: string) {
  const { rows } = await db.query<AutomationRow>(
    `SELECT ${columns} FROM automations a JOIN organizations o ON o.id = :orgId::uuid AND o.deleted_at IS NULL
      WHERE a.deleted_at IS NULL AND a.enabled AND a.partner_id = o.partner_id AND (a.org_id IS NULL OR a.org_id = o.id)
        AND EXISTS (SELECT 1 FROM jsonb_array_elements(a.triggers) t
                     WHERE t ->> 'type' = 'schedule' AND coalesce(t -> 'schedule' ->> 'timezone', '') = '')
      ORDER BY a.created_at, a.id`,
    { orgId },
  );
  return rows;
}

// Devices

/** A device as an automation sees it: its organization and its local zone (its site's, else UTC). */
export type ScopeDevice = {
  id: string;
  orgId: string;
  partnerId: string;
  siteId: string;
  hostname: string;
  timezone: string;
};

const deviceColumns = `d.id, d.org_id AS "orgId", o.partner_id AS "partnerId", d.site_id AS "siteId", d.hostname,
  coalesce(s.timezone, 'UTC') AS timezone`;

/**
 * The live devices of an owner (an organization's, or every organization's of a partner), narrowed to `deviceIds` when
 * given, to a zone when given, and to a compiled device filter over `d` (and its agent `a`) when given.
 */
export async function selectOwnerDevices(
  db: Db,
  owner: Owner,
  narrow: { deviceIds?: string[]; zone?: string; condition?: { sql: string; params: Params } },
) {
  const { rows } = await db.query<ScopeDevice>(
    `SELECT ${deviceColumns}
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
       JOIN sites s ON s.id = d.site_id
       LEFT JOIN agents a ON a.device_id = d.id
      WHERE d.deleted_at IS NULL AND o.partner_id = :partnerId::uuid
        AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)
        AND (:deviceIds::jsonb IS NULL OR d.id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:deviceIds::jsonb) v))
        AND (:zone::text IS NULL OR coalesce(s.timezone, 'UTC') = :zone::text)
        AND ${narrow.condition?.sql ?? 'true'}
      ORDER BY d.org_id, d.id`,
    {
      ...(narrow.condition?.params ?? {}),
      partnerId: owner.partnerId,
      orgId: owner.orgId,
      deviceIds: narrow.deviceIds ? json(narrow.deviceIds) : null,
      zone: narrow.zone ?? null,
    },
  );
  return rows;
}

/** The zones of an owner's live devices (their sites' zones, else UTC), with how many devices are in each. */
export async function selectOwnerZones(db: Db, owner: Owner): Promise<Map<string, number>> {
  const { rows } = await db.query<{ timezone: string; n: number }>(
    `SELECT coalesce(s.timezone, 'UTC') AS timezone, count(*)::int AS n
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL JOIN sites s ON s.id = d.site_id
      WHERE d.deleted_at IS NULL AND o.partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)
      GROUP BY 1 ORDER BY 1`,
    { ...owner },
  );
  return new Map(rows.map((row) => [row.timezone, row.n]));
}

/** Every alert's event reads its device with this: prepared once per connection, as the audit writes are. */
const devicesByIdSql = prepared(
  'logbook_automations_devices_by_id',
  `SELECT ${deviceColumns}
     FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
     JOIN sites s ON s.id = d.site_id
    WHERE d.deleted_at IS NULL
      AND d.id = ANY (ARRAY(SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:ids::jsonb) v))`,
);

/**
 * Live devices by id (the system reads them: no tenancy). The ids are one array the devices' key is probed with, so
 * each event reads its own devices whatever the planner believes of the table's size.
 */
export async function selectDevicesById(db: Db, ids: string[]) {
  const { rows } = await db.query<ScopeDevice>(devicesByIdSql, { ids: json(ids) });
  return rows;
}

/** The live devices among `ids` the principal reaches. */
export async function selectReachableDevices(db: Db, principal: Principal, ids: string[]) {
  const { rows } = await db.query<ScopeDevice>(
    `SELECT ${deviceColumns}
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
       JOIN sites s ON s.id = d.site_id
      WHERE d.deleted_at IS NULL AND d.id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:ids::jsonb) v)
        AND ${orgTenantSql('o')}`,
    { ids: json(ids), ...tenantParams(principal) },
  );
  return rows;
}

/** Whether any policy of kind automation names this automation in an item (no assignment: no device in scope). */
export async function automationAssigned(db: Db, automationId: string): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 FROM policies p JOIN policy_assignments pa ON pa.policy_id = p.id
      WHERE p.kind = 'automation' AND p.deleted_at IS NULL
        AND p.items @> jsonb_build_array(jsonb_build_object('automationId', :automationId::text))
      LIMIT 1`,
    { automationId },
  );
  return row !== undefined;
}

/** Read for every device event (each alert raised is one): prepared once per connection. */
const eventAutomationsSql = prepared(
  'logbook_automations_event_automations',
  `SELECT ${columns} FROM automations a
    WHERE a.deleted_at IS NULL AND a.enabled
      AND a.triggers @> jsonb_build_array(jsonb_build_object('type', 'event', 'event', :event::text))
      AND EXISTS (SELECT 1 FROM jsonb_to_recordset(:owners::jsonb) AS o ("orgId" uuid, "partnerId" uuid)
                   WHERE a.partner_id = o."partnerId" AND (a.org_id IS NULL OR a.org_id = o."orgId"))
    ORDER BY a.created_at, a.id`,
);

/** Live automations of devices' organizations and partners that an event of this name triggers. */
export async function selectEventAutomations(db: Db, owners: { orgId: string; partnerId: string }[], event: string) {
  const { rows } = await db.query<AutomationRow>(eventAutomationsSql, { owners: json(owners), event });
  return rows;
}

/** The automations of an organization and its partner (for a device's effective automations). */
export async function selectOwnerAutomations(db: Db, device: { orgId: string; partnerId: string }) {
  const { rows } = await db.query<AutomationRow>(
    `SELECT ${columns} FROM automations a
      WHERE a.deleted_at IS NULL AND a.partner_id = :partnerId::uuid AND (a.org_id IS NULL OR a.org_id = :orgId::uuid)
      ORDER BY lower(a.name), a.id`,
    device,
  );
  return rows;
}

// Runs

export type RunTrigger = {
  type: 'schedule' | 'event' | 'manual' | 'webhook';
  occurrenceKey: string;
  event?: string;
  eventId?: string;
  timezone?: string;
  occurrence?: string;
};

/** An occurrence fired: its run key with its trigger, and the organizations it records a run in. */
export interface OccurrenceRuns {
  trigger: RunTrigger;
  orgIds: string[];
}

/** A device an occurrence fires on, by the occurrence's index; `windowId`: a maintenance window holding it back. */
export interface Target {
  k: number;
  deviceId: string;
  orgId: string;
  windowId: string | null;
}

/** A run created by insertRunsWithItems with one of its items (none for a run without devices). */
export type CreatedRow = {
  runId: string;
  orgId: string;
  occurrenceKey: string;
  itemId: string | null;
  deviceId: string | null;
  status: 'completed' | 'skipped' | 'queued' | null;
  skipReason: 'loop-guard' | 'concurrency' | 'maintenance' | null;
};

/**
 * The runs of occurrences (one per occurrence and organization; an occurrence that ran there already, a duplicate,
 * creates nothing) with their items, in one statement: each device's item decided by the guards in the same
 * statement (a maintenance window given by the caller, then the loop guard's count of the automation's runs on the
 * device within its window, then a script run the automation started on the device not finished yet). Each device is
 * named by at most one occurrence of a call, so the counts read are those before it.
 */
export async function insertRunsWithItems(
  db: Db,
  run: {
    automationId: string;
    automationVersion: number;
    partnerId: string;
    startedBy: Record<string, unknown>;
    guarded: boolean;
    maxRuns: number;
    windowMinutes: number;
    queue: boolean;
  },
  occurrences: OccurrenceRuns[],
  targets: Target[],
): Promise<CreatedRow[]> {
  const { rows } = await db.query<CreatedRow>(
    `WITH occ AS (
       SELECT o.k, o.trigger, o.trigger ->> 'occurrenceKey' AS key, o."orgIds"
         FROM jsonb_to_recordset(:occurrences::jsonb) AS o (k int, trigger jsonb, "orgIds" jsonb)
     ), runs AS (
       INSERT INTO automation_runs (automation_id, automation_version, partner_id, org_id, occurrence_key, trigger,
                                    started_by)
       SELECT :automationId::uuid, :automationVersion::int, :partnerId::uuid, (org.value #>> '{}')::uuid, occ.key,
              occ.trigger, :startedBy::jsonb
         FROM occ CROSS JOIN jsonb_array_elements(occ."orgIds") org
       ON CONFLICT DO NOTHING
       RETURNING id, org_id, occurrence_key
     ), decided AS (
       SELECT runs.id AS run_id, t.d AS device_id, t.o AS org_id, t.w AS window_id,
              CASE WHEN t.w IS NOT NULL THEN 'maintenance'
                   WHEN :guarded::boolean
                        AND (SELECT count(*) FROM automation_run_items g
                              WHERE g.automation_id = :automationId::uuid AND g.device_id = t.d AND g.guarded
                                AND g.status <> 'skipped'
                                AND g.created_at > now() - :windowMinutes::int * interval '1 minute') >= :maxRuns::int
                     THEN 'loop-guard'
                   WHEN busy.found THEN 'concurrency'
              END AS skip_reason
         FROM jsonb_to_recordset(:targets::jsonb) AS t (k int, d uuid, o uuid, w uuid)
         JOIN occ ON occ.k = t.k
         JOIN runs ON runs.occurrence_key = occ.key AND runs.org_id = t.o
         LEFT JOIN LATERAL (${busyOf('t.d')}) busy ON true
     ), items AS (
       INSERT INTO automation_run_items (run_id, automation_id, device_id, org_id, guarded, status, skip_reason,
                                         maintenance_window_id)
       SELECT run_id, :automationId::uuid, device_id, org_id, :guarded::boolean,
              CASE WHEN skip_reason IS NULL THEN 'completed'
                   WHEN skip_reason = 'concurrency' AND :queue::boolean THEN 'queued'
                   ELSE 'skipped' END,
              skip_reason, window_id
         FROM decided
       RETURNING id, run_id, device_id, status, skip_reason
     )
     SELECT runs.id AS "runId", runs.org_id AS "orgId", runs.occurrence_key AS "occurrenceKey", items.id AS "itemId",
            items.device_id AS "deviceId", items.status, items.skip_reason AS "skipReason"
       FROM runs LEFT JOIN items ON items.run_id = runs.id`,
    {
      ...run,
      startedBy: json(run.startedBy),
      occurrences: json(occurrences.map((o, k) => ({ k, trigger: o.trigger, orgIds: o.orgIds }))),
      targets: json(targets.map((t) => ({ k: t.k, d: t.deviceId, o: t.orgId, w: t.windowId }))),
    },
  );
  return rows;
}

/** Whether an occurrence of the automation has a run (in any organization). */
export async function occurrenceRan(db: Db, automationId: string, occurrenceKey: string): Promise<boolean> {
  const row = await one(
    db,
    'SELECT 1 FROM automation_runs WHERE automation_id = :automationId::uuid AND occurrence_key = :occurrenceKey::text LIMIT 1',
    { automationId, occurrenceKey },
  );
  return row !== undefined;
}

export type ActionOutcome = {
  index: number;
  type: string;
  status: 'dispatched' | 'completed' | 'failed' | 'skipped';
  scriptRunId?: string;
  scriptRunItemId?: string;
  error?: string;
};

/**
 * Links items to the script run items an action started for their devices (one statement, however many items): the
 * link is the item's outcome of that action (`dispatched`, then the script run item's own status).
 */
export async function linkRunScripts(
  db: Db,
  action: { actionIndex: number; scriptRunId: string },
  items: { itemId: string; deviceId: string }[],
): Promise<number> {
  const { rowCount } = await db.query(
    `INSERT INTO automation_run_scripts (run_item_id, action_index, script_run_id, script_run_item_id)
     SELECT x."itemId", :actionIndex::int, sri.run_id, sri.id
       FROM jsonb_to_recordset(:items::jsonb) AS x ("itemId" uuid, "deviceId" uuid)
       JOIN script_run_items sri ON sri.run_id = :scriptRunId::uuid AND sri.device_id = x."deviceId"`,
    { ...action, items: json(items) },
  );
  return rowCount;
}

/** Items' outcomes once their actions ran. */
export async function updateItems(
  db: Db,
  items: { id: string; status: 'completed' | 'failed'; actions: ActionOutcome[] }[],
): Promise<void> {
  await db.query(
    `UPDATE automation_run_items i SET status = x.status, actions = x.actions
       FROM jsonb_to_recordset(:items::jsonb) AS x (id uuid, status text, actions jsonb)
      WHERE i.id = x.id`,
    { items: json(items) },
  );
}

/** Per device, its runs of this automation counted by the loop guard within the last `windowMinutes`. */
export async function countGuardedRuns(db: Db, automationId: string, deviceIds: string[], windowMinutes: number) {
  const { rows } = await db.query<{ deviceId: string; n: number }>(
    `SELECT device_id AS "deviceId", count(*)::int AS n FROM automation_run_items
      WHERE automation_id = :automationId::uuid AND guarded AND status <> 'skipped'
        AND created_at > now() - :windowMinutes::int * interval '1 minute'
        AND device_id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:deviceIds::jsonb) v)
      GROUP BY device_id`,
    { automationId, deviceIds: json(deviceIds), windowMinutes },
  );
  return new Map(rows.map((row) => [row.deviceId, row.n]));
}

/**
 * Whether a script run this automation started on the device has not finished yet (nor passed its deadline or,
 * pending, its expiry), with the latest of those: read per device through its items (a lateral subquery, never a
 * scan of every script run item).
 */
const busyOf = (device: string) => `
  SELECT true AS found, max(coalesce(sri.deadline_at, sri.expires_at)) AS until
    FROM automation_run_items b
    JOIN automation_run_scripts rs ON rs.run_item_id = b.id
    JOIN script_run_items sri ON sri.id = rs.script_run_item_id
   WHERE b.automation_id = :automationId::uuid AND b.device_id = ${device} AND b.status <> 'skipped'
     AND sri.status IN ('pending', 'sent', 'running') AND coalesce(sri.deadline_at, sri.expires_at) > now()
  HAVING count(*) > 0`;

/** Devices on which a script run this automation started has not finished yet, with the latest end of those. */
export async function selectBusyDevices(db: Db, automationId: string, deviceIds: string[]) {
  const { rows } = await db.query<{ deviceId: string; until: Date | null }>(
    `SELECT x.id AS "deviceId", busy.until
       FROM (SELECT (v #>> '{}')::uuid AS id FROM jsonb_array_elements(:deviceIds::jsonb) v) x
       JOIN LATERAL (${busyOf('x.id')}) busy ON true`,
    { automationId, deviceIds: json(deviceIds) },
  );
  return new Map(rows.map((row) => [row.deviceId, row.until]));
}

export type RunRow = {
  id: string;
  automationId: string;
  automationName: string;
  automationVersion: number;
  orgId: string;
  trigger: RunTrigger;
  createdAt: Date;
};

const runColumns = `r.id, r.automation_id AS "automationId", a.name AS "automationName",
  r.automation_version AS "automationVersion", r.org_id AS "orgId", r.trigger, r.created_at AS "createdAt"`;
const reachableRun = `JOIN automations a ON a.id = r.automation_id
  JOIN organizations o ON o.id = r.org_id AND o.deleted_at IS NULL
  WHERE ${orgTenantSql('o')}`;

export function selectRun(db: Db, principal: Principal, runId: string) {
  return one<RunRow>(db, `SELECT ${runColumns} FROM automation_runs r ${reachableRun} AND r.id = :runId::uuid`, {
    runId,
    ...tenantParams(principal),
  });
}

export function selectRunById(db: Db, runId: string) {
  return one<RunRow>(
    db,
    `SELECT ${runColumns} FROM automation_runs r JOIN automations a ON a.id = r.automation_id
    WHERE r.id = :runId::uuid`,
    { runId },
  );
}

export function selectRuns(db: Db, principal: Principal, automationId: string, page: Page) {
  return selectPage<RunRow>(
    db,
    runColumns,
    `automation_runs r ${reachableRun} AND r.automation_id = :automationId::uuid`,
    'r.created_at DESC, r.id',
    { automationId, ...tenantParams(principal) },
    page,
  );
}

export type ItemRow = {
  id: string;
  runId: string;
  deviceId: string;
  hostname: string;
  orgId: string;
  status: 'completed' | 'failed' | 'skipped' | 'queued';
  skipReason: 'loop-guard' | 'concurrency' | 'maintenance' | null;
  maintenanceWindowId: string | null;
  actions: ActionOutcome[];
  createdAt: Date;
  scripts: {
    actionIndex: number;
    scriptRunId: string;
    scriptRunItemId: string;
    status: string;
    exitCode: number | null;
    durationMs: number | null;
    output: string | null;
  }[];
};

/** The items of runs, each with the script run items it started as they stand now. */
export async function selectItems(db: Db, runIds: string[]) {
  if (runIds.length === 0) return [];
  const { rows } = await db.query<ItemRow>(
    `SELECT i.id, i.run_id AS "runId", i.device_id AS "deviceId", d.hostname, i.org_id AS "orgId", i.status,
            i.skip_reason AS "skipReason", i.maintenance_window_id AS "maintenanceWindowId", i.actions,
            i.created_at AS "createdAt",
            coalesce((SELECT jsonb_agg(jsonb_build_object('actionIndex', rs.action_index, 'scriptRunId', rs.script_run_id,
                                       'scriptRunItemId', rs.script_run_item_id, 'status', sri.status,
                                       'exitCode', sri.exit_code, 'durationMs', sri.duration_ms,
                                       'output', left(coalesce(sri.stdout, sri.stderr), 500)) ORDER BY rs.action_index)
                        FROM automation_run_scripts rs JOIN script_run_items sri ON sri.id = rs.script_run_item_id
                       WHERE rs.run_item_id = i.id), '[]') AS scripts
       FROM automation_run_items i JOIN devices d ON d.id = i.device_id
      WHERE i.run_id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:runIds::jsonb) v)
      ORDER BY d.hostname, i.id`,
    { runIds: json(runIds) },
  );
  return rows;
}
