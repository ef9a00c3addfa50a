import type { Principal } from '../auth/principal.ts';
import { ownedRowTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, prepared, type Tx } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { DeviceFilter } from '../device-groups/filter.ts';
import { dynamicGroupsHolding, dynamicMembership } from '../device-groups/membership.ts';
import type { Misfire } from '../schedules/schemas.ts';
import type { Severity, SuppressKind, Targets } from './schemas.ts';

export interface Owner {
  partnerId: string;
  orgId: string | null;
}

const windowColumns = `w.id, w.partner_id AS "partnerId", w.org_id AS "orgId",
  CASE WHEN w.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, w.name,
  jsonb_build_object('rrule', w.rrule, 'start', w.start_local, 'timezone', w.timezone,
                     'durationMinutes', w.duration_minutes, 'exdates', w.exdates, 'misfire', w.misfire) AS schedule,
  w.targets, w.suppress, w.allow_severity AS "allowSeverity", w.version,
  CASE WHEN w.active_until IS NULL THEN NULL ELSE jsonb_build_object('occurrenceKey', w.active_key,
       'from', w.active_from, 'until', w.active_until, 'manual', w.active_manual) END AS active,
  w.created_at AS "createdAt", w.updated_at AS "updatedAt"`;

export type WindowSchedule = {
  rrule: string | null;
  start: string;
  timezone: string;
  durationMinutes: number;
  exdates: string[];
  misfire: Misfire;
};

export type WindowRow = {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  schedule: WindowSchedule;
  targets: Targets;
  suppress: SuppressKind[];
  allowSeverity: Severity | null;
  version: number;
  active: { occurrenceKey: string; from: string; until: string; manual: boolean } | null;
  createdAt: Date;
  updatedAt: Date;
};

/** Windows of an owner the principal reaches: a partner's for its users; an organization's and its partner's. */
const reachableWindow = ownedRowTenantSql('w');

export async function insertWindow(
  db: Db,
  owner: Owner,
  input: {
    name: string;
    schedule: WindowSchedule;
    targets: Targets;
    suppress: SuppressKind[];
    allowSeverity: Severity | null;
  },
) {
  const row = await one<WindowRow>(
    db,
    `INSERT INTO maintenance_windows AS w (partner_id, org_id, name, rrule, start_local, timezone, duration_minutes,
                                           exdates, misfire, targets, suppress, allow_severity)
     VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :rrule::text, :start::text, :timezone::text,
             :durationMinutes::int, :exdates::jsonb, :misfire::jsonb, :targets::jsonb, :suppress::jsonb,
             :allowSeverity::text)
     RETURNING ${windowColumns}`,
    {
      ...owner,
      name: input.name,
      ...input.schedule,
      misfire: { ...input.schedule.misfire },
      targets: { ...input.targets },
      suppress: input.suppress,
      allowSeverity: input.allowSeverity,
    },
  );
  return row!;
}

export function selectWindow(db: Db, principal: Principal, id: string) {
  return one<WindowRow>(
    db,
    `SELECT ${windowColumns} FROM maintenance_windows w WHERE w.id = :id::uuid AND ${reachableWindow}`,
    { id, ...tenantParams(principal) },
  );
}

/** A window as its jobs read it (no tenancy: the system acts); deleted ones are undefined. */
export function selectLiveWindow(db: Db, id: string, lock = false) {
  return one<WindowRow>(
    db,
    `SELECT ${windowColumns} FROM maintenance_windows w WHERE w.id = :id::uuid AND w.deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
    { id },
  );
}

export function selectWindows(db: Db, principal: Principal, orgId: string | undefined, page: Page) {
  return selectPage<WindowRow>(
    db,
    windowColumns,
    `maintenance_windows w WHERE ${reachableWindow}
       AND (:orgId::uuid IS NULL OR w.org_id IS NULL OR w.org_id = :orgId::uuid)`,
    'w.name, w.id',
    { ...tenantParams(principal), orgId: orgId ?? null },
    page,
  );
}

/** Changes a window and bumps its version: every job armed for the old version finds it moved. */
export async function updateWindowRow(
  db: Db,
  id: string,
  change: {
    name?: string;
    schedule?: WindowSchedule;
    targets?: Targets;
    suppress?: SuppressKind[];
    allowSeverity?: Severity | null;
  },
) {
  const row = await one<WindowRow>(
    db,
    `UPDATE maintenance_windows w SET name = coalesce(:name::text, name),
            rrule = CASE WHEN :scheduleSet::boolean THEN :rrule::text ELSE rrule END,
            start_local = coalesce(:start::text, start_local), timezone = coalesce(:timezone::text, timezone),
            duration_minutes = coalesce(:durationMinutes::int, duration_minutes),
            exdates = coalesce(:exdates::jsonb, exdates), misfire = coalesce(:misfire::jsonb, misfire),
            targets = coalesce(:targets::jsonb, targets), suppress = coalesce(:suppress::jsonb, suppress),
            allow_severity = CASE WHEN :severitySet::boolean THEN :allowSeverity::text ELSE allow_severity END,
            version = version + 1, updated_at = now()
      WHERE w.id = :id::uuid AND w.deleted_at IS NULL
      RETURNING ${windowColumns}`,
    {
      id,
      name: change.name,
      scheduleSet: change.schedule !== undefined,
      rrule: change.schedule?.rrule ?? null,
      start: change.schedule?.start,
      timezone: change.schedule?.timezone,
      durationMinutes: change.schedule?.durationMinutes,
      exdates: change.schedule?.exdates,
      misfire: change.schedule ? { ...change.schedule.misfire } : undefined,
      targets: change.targets ? { ...change.targets } : undefined,
      suppress: change.suppress,
      severitySet: change.allowSeverity !== undefined,
      allowSeverity: change.allowSeverity ?? null,
    },
  );
  return row!;
}

export async function softDeleteWindow(db: Db, id: string): Promise<void> {
  await db.query(
    `UPDATE maintenance_windows SET deleted_at = now(), version = version + 1, active_key = NULL, active_from = NULL,
            active_until = NULL, active_manual = false WHERE id = :id::uuid`,
    { id },
  );
}

/** Makes an occurrence the window's one in progress. */
export async function setActive(
  tx: Tx,
  id: string,
  active: { key: string; from: Date; until: Date; manual: boolean },
): Promise<void> {
  await tx.query(
    `UPDATE maintenance_windows SET active_key = :key::text, active_from = :from::timestamptz,
            active_until = :until::timestamptz, active_manual = :manual::boolean WHERE id = :id::uuid`,
    { id, ...active },
  );
}

export async function clearActive(tx: Tx, id: string): Promise<void> {
  await tx.query(
    `UPDATE maintenance_windows SET active_key = NULL, active_from = NULL, active_until = NULL, active_manual = false
      WHERE id = :id::uuid`,
    { id },
  );
}

/**
 * Whether a window covers a device of an organization: the organization, the device's site, one of its static
 * groups, one of the dynamic groups whose filter it meets (`:dynamicGroupIds`, from dynamicTargetsHolding), or the
 * device itself is among its targets.
 */
const covers = `(w.targets -> 'orgIds' ? :orgId::text
  OR (:deviceId::uuid IS NOT NULL AND (
        w.targets -> 'deviceIds' ? :deviceId::text
     OR w.targets -> 'siteIds' ? (SELECT d.site_id::text FROM devices d WHERE d.id = :deviceId::uuid)
     OR w.targets -> 'groupIds' ?| ARRAY(SELECT jsonb_array_elements_text(:dynamicGroupIds::jsonb))
     OR EXISTS (SELECT 1 FROM device_group_members m
                 WHERE m.device_id = :deviceId::uuid AND w.targets -> 'groupIds' ? m.group_id::text))))`;

const inProgress = `w.deleted_at IS NULL AND w.active_from <= now() AND w.active_until > now()
  AND w.partner_id = (SELECT o.partner_id FROM organizations o WHERE o.id = :orgId::uuid)
  AND (w.org_id IS NULL OR w.org_id = :orgId::uuid)`;

/**
 * The dynamic groups named by a window in progress that hold the device now: their filters are read (none, and no
 * second statement, while no window in progress names a dynamic group) and evaluated against the device's row.
 */
async function dynamicTargetsHolding(db: Db, orgId: string, deviceId: string | null): Promise<string[]> {
  if (!deviceId) return [];
  const { rows } = await db.query<{ id: string; filter: DeviceFilter }>(
    `SELECT g.id, g.filter FROM device_groups g
      WHERE g.org_id = :orgId::uuid AND g.type = 'dynamic'
        AND EXISTS (SELECT 1 FROM maintenance_windows w WHERE ${inProgress} AND w.targets -> 'groupIds' ? g.id::text)`,
    { orgId },
  );
  return dynamicGroupsHolding(db, deviceId, rows);
}

const rank = (column: string) =>
  `CASE ${column} WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 WHEN 'critical' THEN 4 END`;

const suppressingSql = `SELECT w.id FROM maintenance_windows w
  WHERE ${inProgress} AND ${covers}
    AND (w.suppress ? 'alerts' OR w.suppress ? 'notifications')
    AND (w.allow_severity IS NULL OR ${rank(':severity::text')} < ${rank('w.allow_severity')})
  ORDER BY w.active_until DESC, w.id LIMIT 1`;

/** Every new alert is checked with this: prepared once per connection. */
const suppressingFirstSql = prepared(
  'logbook_maintenance_suppressing',
  `SELECT (${suppressingSql}) AS id,
          CASE WHEN :deviceId::uuid IS NOT NULL THEN (
            SELECT jsonb_agg(jsonb_build_object('id', g.id, 'filter', g.filter)) FROM device_groups g
             WHERE g.org_id = :orgId::uuid AND g.type = 'dynamic'
               AND EXISTS (SELECT 1 FROM maintenance_windows w WHERE ${inProgress} AND w.targets -> 'groupIds' ? g.id::text))
          END AS dynamic`,
);

/**
 * The window in progress that holds back a new alert of this severity on this device: one that suppresses alerts
 * or notifications and whose allowed severity (if any) the alert does not reach; the one ending last. One statement
 * while no window in progress names a dynamic group of the organization (it also reads whether one does, and the
 * filters of those groups); otherwise their filters are evaluated against the device's row and the window read again
 * with the groups that hold it.
 */
export async function selectSuppressingWindow(
  db: Db,
  alert: { orgId: string; deviceId: string | null; severity: string },
) {
  const params = { orgId: alert.orgId, deviceId: alert.deviceId, severity: alert.severity };
  const first = await one<{ id: string | null; dynamic: { id: string; filter: DeviceFilter }[] | null }>(
    db,
    suppressingFirstSql,
    { ...params, dynamicGroupIds: [] },
  );
  if (!first?.dynamic || !alert.deviceId) return first?.id ? { id: first.id } : undefined;
  const dynamicGroupIds = await dynamicGroupsHolding(db, alert.deviceId, first.dynamic);
  if (dynamicGroupIds.length === 0) return first.id ? { id: first.id } : undefined;
  return one<{ id: string }>(db, suppressingSql, { ...params, dynamicGroupIds });
}

/** The windows in progress covering a device. */
export async function selectDeviceWindows(db: Db, device: { orgId: string; deviceId: string }) {
  const dynamicGroupIds = await dynamicTargetsHolding(db, device.orgId, device.deviceId);
  const { rows } = await db.query<{
    id: string;
    name: string;
    from: Date;
    until: Date;
    manual: boolean;
    suppress: SuppressKind[];
    allowSeverity: Severity | null;
  }>(
    `SELECT w.id, w.name, w.active_from AS "from", w.active_until AS "until", w.active_manual AS manual, w.suppress,
            w.allow_severity AS "allowSeverity"
       FROM maintenance_windows w WHERE ${inProgress} AND ${covers}
      ORDER BY w.active_until DESC, w.id`,
    { ...device, dynamicGroupIds },
  );
  return rows;
}

/** Target ids of `kind` that the owner does not have (another tenant's read as unknown). */
export async function selectUnknownTargets(
  db: Db,
  owner: Owner,
  kind: keyof Targets,
  ids: string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const tables: Record<keyof Targets, string> = {
    orgIds:
      'organizations t WHERE t.deleted_at IS NULL AND t.id::text = x.value AND t.partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR t.id = :orgId::uuid)',
    siteIds:
      'sites t JOIN organizations o ON o.id = t.org_id WHERE t.deleted_at IS NULL AND t.id::text = x.value AND o.partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR t.org_id = :orgId::uuid)',
    groupIds:
      'device_groups t JOIN organizations o ON o.id = t.org_id WHERE t.id::text = x.value AND o.partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR t.org_id = :orgId::uuid)',
    deviceIds:
      'devices t JOIN organizations o ON o.id = t.org_id WHERE t.deleted_at IS NULL AND t.id::text = x.value AND o.partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR t.org_id = :orgId::uuid)',
  };
  const { rows } = await db.query<{ id: string }>(
    `SELECT x.value AS id FROM jsonb_array_elements_text(:ids::jsonb) x WHERE NOT EXISTS (SELECT 1 FROM ${tables[kind]})`,
    { ids, ...owner },
  );
  return rows.map((row) => row.id);
}

/** The default zone of a window: the first named site's, else the owner organization's first site with one. */
export async function selectDefaultZone(db: Db, owner: Owner, siteIds: string[]): Promise<string | undefined> {
  const row = await one<{ timezone: string }>(
    db,
    `SELECT s.timezone FROM sites s
      WHERE s.deleted_at IS NULL AND s.timezone IS NOT NULL
        AND (s.id::text IN (SELECT value FROM jsonb_array_elements_text(:siteIds::jsonb))
             OR (jsonb_array_length(:siteIds::jsonb) = 0 AND s.org_id = :orgId::uuid))
      ORDER BY s.created_at, s.id LIMIT 1`,
    { siteIds, orgId: owner.orgId },
  );
  return row?.timezone;
}

/** The organization of a device the principal reaches. */
export function selectDeviceOrg(db: Db, principal: Principal, deviceId: string) {
  return one<{ orgId: string }>(
    db,
    `SELECT d.org_id AS "orgId" FROM devices d JOIN organizations o ON o.id = d.org_id
      WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL AND o.deleted_at IS NULL
        AND (:tenantScope::text = 'platform'
             OR (:tenantScope::text = 'partner' AND o.partner_id = :tenantPartnerId::uuid)
             OR (:tenantScope::text = 'organization' AND o.id = :tenantOrgId::uuid))`,
    { deviceId, ...tenantParams(principal) },
  );
}

/**
 * For each device, the window in progress covering it that suppresses one of `kinds` (automations, patching, scripts),
 * if any, the one ending last: one statement for all the devices (an indexed read of the windows in progress, nothing
 * more while none is), and a second only when such a window names a dynamic group of a device's organization, whose
 * filters are then evaluated against those devices' rows together.
 */
export async function suppressingWindows(
  db: Db,
  devices: readonly { orgId: string; deviceId: string }[],
  kinds: readonly SuppressKind[],
): Promise<Map<string, string>> {
  const held = new Map<string, string>();
  if (kinds.length === 0 || devices.length === 0) return held;
  const { rows } = await db.query<{
    deviceId: string;
    windowId: string;
    covered: boolean;
    dynamic: { id: string; filter: DeviceFilter }[];
  }>(
    `WITH x AS (SELECT d.id AS device_id, d.org_id, d.site_id, o.partner_id
                  FROM devices d JOIN organizations o ON o.id = d.org_id
                 WHERE d.id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:deviceIds::jsonb) v))
     SELECT x.device_id AS "deviceId", w.id AS "windowId",
            (w.targets -> 'orgIds' ? x.org_id::text OR w.targets -> 'deviceIds' ? x.device_id::text
             OR w.targets -> 'siteIds' ? x.site_id::text
             OR EXISTS (SELECT 1 FROM device_group_members m
                         WHERE m.device_id = x.device_id AND w.targets -> 'groupIds' ? m.group_id::text)) AS covered,
            coalesce((SELECT jsonb_agg(jsonb_build_object('id', g.id, 'filter', g.filter)) FROM device_groups g
                       WHERE g.org_id = x.org_id AND g.type = 'dynamic' AND (g.site_id IS NULL OR g.site_id = x.site_id)
                         AND w.targets -> 'groupIds' ? g.id::text), '[]'::jsonb) AS dynamic
       FROM x JOIN maintenance_windows w
         ON w.partner_id = x.partner_id AND (w.org_id IS NULL OR w.org_id = x.org_id)
        AND w.deleted_at IS NULL AND w.active_from <= now() AND w.active_until > now()
        AND w.suppress ?| ARRAY(SELECT jsonb_array_elements_text(:kinds::jsonb))
      ORDER BY x.device_id, w.active_until DESC, w.id`,
    { deviceIds: [...new Set(devices.map((d) => d.deviceId))], kinds: [...kinds] },
  );
  if (rows.length === 0) return held;
  // Devices whose windows, ending last first, are covered by a dynamic group: its membership decides.
  const pairs = rows.filter((row) => !row.covered && row.dynamic.length > 0);
  const holding = new Set<string>();
  if (pairs.length > 0) {
    const filters = new Map(pairs.flatMap((row) => row.dynamic.map((g) => [g.id, g] as const)));
    const membership = dynamicMembership([...filters.values()]);
    const { rows: members } = await db.query<{ deviceId: string; groupId: string }>(
      `SELECT d.id AS "deviceId", g.id AS "groupId"
         FROM jsonb_to_recordset(:pairs::jsonb) AS p ("deviceId" uuid, "groupId" uuid)
         JOIN devices d ON d.id = p."deviceId" JOIN device_groups g ON g.id = p."groupId"
        WHERE coalesce(${membership.sql}, false)`,
      {
        ...membership.params,
        pairs: pairs.flatMap((row) => row.dynamic.map((g) => ({ deviceId: row.deviceId, groupId: g.id }))),
      },
    );
    for (const member of members) holding.add(`${member.deviceId}:${member.groupId}`);
  }
  for (const row of rows) {
    if (held.has(row.deviceId)) continue;
    if (row.covered || row.dynamic.some((g) => holding.has(`${row.deviceId}:${g.id}`)))
      held.set(row.deviceId, row.windowId);
  }
  return held;
}
