import { type Db, one, type Params } from '../db/db.ts';
import { likePattern } from '../db/like-pattern.ts';
import { type Page, selectPage } from '../db/page.ts';
import { pagination } from '../db/paging.ts';
import { type DeviceRow, deviceColumns } from '../hierarchy/store.ts';
import type { DeviceFilter } from './filter.ts';

const groupColumns = `g.id, g.org_id AS "orgId", g.site_id AS "siteId", g.parent_id AS "parentId", g.name, g.type,
  g.filter, g.source_system AS "sourceSystem", g.external_id AS "externalId", g.created_at AS "createdAt",
  g.updated_at AS "updatedAt"`;

export type GroupRow = {
  id: string;
  orgId: string;
  siteId: string | null;
  parentId: string | null;
  name: string;
  type: 'static' | 'dynamic';
  filter: DeviceFilter | null;
  sourceSystem: string | null;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
};

export interface GroupInput {
  name: string;
  type: 'static' | 'dynamic';
  siteId: string | null;
  parentId: string | null;
  filter: DeviceFilter | null;
  sourceSystem: string | null;
  externalId: string | null;
}

/**
 * Group writes of one organization take turns on this transaction lock, so a name check, a cycle check or an
 * import's re-derivation holds until commit.
 */
export async function lockGroupsOf(tx: Db, orgId: string) {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('device_groups:' || :orgId::text, 0))`, { orgId });
}

export function selectGroup(db: Db, groupId: string) {
  return one<GroupRow>(db, `SELECT ${groupColumns} FROM device_groups g WHERE g.id = :groupId::uuid`, { groupId });
}

export function selectGroups(db: Db, orgId: string, filter: { search?: string; type?: string }, page: Page) {
  return selectPage<GroupRow>(
    db,
    groupColumns,
    `device_groups g WHERE g.org_id = :orgId::uuid
       AND (:search::text IS NULL OR g.name ILIKE :search::text)
       AND (:type::text IS NULL OR g.type = :type::text)`,
    'lower(g.name), g.id',
    { orgId, search: filter.search ? likePattern(filter.search) : null, type: filter.type ?? null },
    page,
  );
}

/** The group of that name in the organization (ignoring case), other than `exceptId`. */
export function selectGroupNamed(db: Db, orgId: string, name: string, exceptId: string | null = null) {
  return one<{ id: string }>(
    db,
    `SELECT id FROM device_groups WHERE org_id = :orgId::uuid AND lower(name) = lower(:name::text)
        AND id IS DISTINCT FROM :exceptId::uuid`,
    { orgId, name, exceptId },
  );
}

/** Whether `groupId` is `ancestorOf` or one of its ancestors: making it the parent would close a cycle. */
export async function isAncestorOrSelf(db: Db, groupId: string, ancestorOf: string) {
  const found = await one(
    db,
    `WITH RECURSIVE up AS (
       SELECT id, parent_id, 1 AS depth FROM device_groups WHERE id = :ancestorOf::uuid
       UNION ALL
       SELECT g.id, g.parent_id, up.depth + 1 FROM device_groups g JOIN up ON g.id = up.parent_id WHERE up.depth < 1000
     )
     SELECT 1 AS found FROM up WHERE id = :groupId::uuid`,
    { groupId, ancestorOf },
  );
  return Boolean(found);
}

/** Inserts groups of one organization in one statement; returns them in input order. */
export async function insertGroupRows(tx: Db, orgId: string, groups: GroupInput[]) {
  const { rows } = await tx.query<GroupRow>(
    `WITH g AS (
       INSERT INTO device_groups (org_id, name, type, site_id, parent_id, filter, source_system, external_id)
       SELECT :orgId::uuid, r.name, r.type, r."siteId", r."parentId", r.filter, r."sourceSystem", r."externalId"
         FROM jsonb_to_recordset(:groups::jsonb) AS r(name text, type text, "siteId" uuid, "parentId" uuid, filter jsonb,
              "sourceSystem" text, "externalId" text)
       RETURNING *
     )
     SELECT ${groupColumns} FROM g`,
    { orgId, groups: groups as unknown as Params[string] },
  );
  // Returned rows carry no ordinality: match them back by name, which is unique per organization.
  const byName = new Map(rows.map((row) => [row.name.toLowerCase(), row]));
  return groups.map((group) => byName.get(group.name.toLowerCase())!);
}

export function updateGroupRow(
  db: Db,
  groupId: string,
  change: { name?: string; siteId?: string | null; parentId?: string | null; filter?: DeviceFilter },
) {
  return one<GroupRow>(
    db,
    `UPDATE device_groups g SET
        name = COALESCE(:name::text, g.name),
        site_id = CASE WHEN :setSiteId::boolean THEN :siteId::uuid ELSE g.site_id END,
        parent_id = CASE WHEN :setParentId::boolean THEN :parentId::uuid ELSE g.parent_id END,
        filter = COALESCE(:filter::jsonb, g.filter),
        updated_at = now()
      WHERE g.id = :groupId::uuid
      RETURNING ${groupColumns}`,
    {
      groupId,
      name: change.name ?? null,
      setSiteId: 'siteId' in change,
      siteId: change.siteId ?? null,
      setParentId: 'parentId' in change,
      parentId: change.parentId ?? null,
      filter: (change.filter as Params[string]) ?? null,
    },
  );
}

/** Renames and refilters imported groups in one statement. */
export async function updateImportedGroupRows(tx: Db, changes: { id: string; name: string; filter: DeviceFilter }[]) {
  const { rows } = await tx.query<GroupRow>(
    `UPDATE device_groups g SET name = r.name, filter = r.filter, updated_at = now()
       FROM jsonb_to_recordset(:changes::jsonb) AS r(id uuid, name text, filter jsonb)
      WHERE g.id = r.id
      RETURNING ${groupColumns}`,
    { changes: changes as unknown as Params[string] },
  );
  return rows;
}

export async function deleteGroupRow(tx: Db, groupId: string) {
  const { rowCount } = await tx.query('DELETE FROM device_groups WHERE id = :groupId::uuid', { groupId });
  return rowCount > 0;
}

/** The organization's imported groups with these (sourceSystem, externalId) keys. */
export async function selectImportedGroups(
  db: Db,
  orgId: string,
  keys: { sourceSystem: string; externalId: string }[],
) {
  const { rows } = await db.query<GroupRow>(
    `SELECT ${groupColumns} FROM device_groups g
       JOIN jsonb_to_recordset(:keys::jsonb) AS k("sourceSystem" text, "externalId" text)
         ON g.source_system = k."sourceSystem" AND g.external_id = k."externalId"
      WHERE g.org_id = :orgId::uuid`,
    { orgId, keys: keys as unknown as Params[string] },
  );
  return rows;
}

/** The ids and lower-case names of the organization's groups with these names. */
export async function selectGroupsNamed(db: Db, orgId: string, names: string[]) {
  const { rows } = await db.query<{ id: string; name: string }>(
    `SELECT id, lower(name) AS name FROM device_groups
      WHERE org_id = :orgId::uuid AND lower(name) IN (SELECT lower(n) FROM jsonb_array_elements_text(:names::jsonb) n)`,
    { orgId, names },
  );
  return rows;
}

/** The filters of the dynamic groups of a device's organization, for evaluating them all against the device. */
export async function selectDynamicFiltersOf(db: Db, deviceId: string) {
  const { rows } = await db.query<{ id: string; filter: DeviceFilter }>(
    `SELECT g.id, g.filter FROM devices d JOIN device_groups g ON g.org_id = d.org_id AND g.type = 'dynamic'
      WHERE d.id = :deviceId::uuid`,
    { deviceId },
  );
  return rows;
}

// Members

const memberOrder = {
  static: { newest: 'm.added_at DESC, d.id DESC', hostname: 'd.hostname, d.id' },
  dynamic: { newest: 'd.created_at DESC, d.id DESC', hostname: 'd.hostname, d.id' },
} as const;

/** A static group's members, live devices only (deleted ones leave their groups: 0025). */
export function selectStaticMembers(db: Db, groupId: string, sort: 'newest' | 'hostname', page: Page) {
  return selectPage<DeviceRow>(
    db,
    deviceColumns,
    `device_group_members m JOIN devices d ON d.id = m.device_id AND d.deleted_at IS NULL
       LEFT JOIN agents a ON a.device_id = d.id
      WHERE m.group_id = :groupId::uuid`,
    memberOrder.static[sort],
    { groupId },
    page,
  );
}

/**
 * The live devices of an organization (of one site when given) matching a compiled filter: a dynamic group's
 * members or a preview. `params` holds the filter's parameters (filter.ts filterParams).
 */
export function selectMatchingDevices(
  db: Db,
  scope: { orgId: string; siteId: string | null },
  condition: { sql: string; params: Params },
  sort: 'newest' | 'hostname',
  page: Page,
) {
  return selectPage<DeviceRow>(
    db,
    deviceColumns,
    `devices d LEFT JOIN agents a ON a.device_id = d.id
      WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL
        AND (:siteId::uuid IS NULL OR d.site_id = :siteId::uuid) AND ${condition.sql}`,
    memberOrder.dynamic[sort],
    { ...condition.params, orgId: scope.orgId, siteId: scope.siteId },
    page,
  );
}

/**
 * Adds devices to a static group: per distinct id whether it is a live device of the group's organization (and
 * site, when the group has one) and whether it was added now. The devices are held FOR SHARE, so none is deleted
 * (and left in the group) while it is added.
 */
export async function insertMembers(
  tx: Db,
  group: { id: string; orgId: string; siteId: string | null },
  deviceIds: string[],
) {
  const { rows } = await tx.query<{ deviceId: string; found: boolean; inSite: boolean; added: boolean }>(
    `WITH ids AS (SELECT DISTINCT v::uuid AS id FROM jsonb_array_elements_text(:deviceIds::jsonb) v),
     live AS (
       SELECT d.id, d.site_id FROM devices d JOIN ids ON ids.id = d.id
        WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL
        FOR SHARE OF d
     ),
     added AS (
       INSERT INTO device_group_members (group_id, org_id, device_id)
       SELECT :groupId::uuid, :orgId::uuid, live.id FROM live
        WHERE :siteId::uuid IS NULL OR live.site_id = :siteId::uuid
       ON CONFLICT DO NOTHING
       RETURNING device_id
     )
     SELECT ids.id AS "deviceId", live.id IS NOT NULL AS found,
            (live.id IS NOT NULL AND (:siteId::uuid IS NULL OR live.site_id = :siteId::uuid)) AS "inSite",
            added.device_id IS NOT NULL AS added
       FROM ids LEFT JOIN live ON live.id = ids.id LEFT JOIN added ON added.device_id = ids.id`,
    { groupId: group.id, orgId: group.orgId, siteId: group.siteId, deviceIds },
  );
  return rows;
}

/** Removes devices from a static group: per distinct id whether it is a live device of the organization and whether it was a member. */
export async function deleteMembers(tx: Db, group: { id: string; orgId: string }, deviceIds: string[]) {
  const { rows } = await tx.query<{ deviceId: string; found: boolean; removed: boolean }>(
    `WITH ids AS (SELECT DISTINCT v::uuid AS id FROM jsonb_array_elements_text(:deviceIds::jsonb) v),
     removed AS (
       DELETE FROM device_group_members m USING ids
        WHERE m.group_id = :groupId::uuid AND m.device_id = ids.id
       RETURNING m.device_id
     )
     SELECT ids.id AS "deviceId",
            EXISTS (SELECT 1 FROM devices d WHERE d.id = ids.id AND d.org_id = :orgId::uuid AND d.deleted_at IS NULL) AS found,
            removed.device_id IS NOT NULL AS removed
       FROM ids LEFT JOIN removed ON removed.device_id = ids.id`,
    { groupId: group.id, orgId: group.orgId, deviceIds },
  );
  return rows;
}

/**
 * The groups a device belongs to, in one pass over the organization's groups: a static group by its member row,
 * a dynamic group by its compiled filter evaluated against the device's row (`dynamic`: a CASE on g.id). Page and
 * total come from one statement (count(*) OVER ()), so the filters are planned once; only a page past the end
 * needs a second statement for the total.
 */
export async function selectGroupsOfDevice(
  db: Db,
  device: { id: string; orgId: string },
  dynamic: { sql: string; params: Params },
  page: Page,
) {
  const params = { ...dynamic.params, deviceId: device.id, orgId: device.orgId };
  const from = `device_groups g JOIN devices d ON d.id = :deviceId::uuid
      WHERE g.org_id = :orgId::uuid AND (g.site_id IS NULL OR g.site_id = d.site_id)
        AND CASE WHEN g.type = 'static'
                 THEN EXISTS (SELECT 1 FROM device_group_members m WHERE m.group_id = g.id AND m.device_id = d.id)
                 ELSE coalesce(${dynamic.sql}, false) END`;
  const { rows } = await db.query<GroupRow & { total: number }>(
    `SELECT ${groupColumns}, count(*) OVER () AS total FROM ${from}
      ORDER BY lower(g.name), g.id LIMIT :limit::int OFFSET :offset::int`,
    { ...params, limit: page.limit, offset: (page.page - 1) * page.limit },
  );
  const total =
    rows[0]?.total ?? (await one<{ total: number }>(db, `SELECT count(*) AS total FROM ${from}`, params))!.total;
  return {
    data: rows.map(({ total: _, ...group }) => group),
    pagination: pagination(page.page, page.limit, Number(total)),
  };
}

/** The dynamic groups of the device's organization (and site) whose condition the device's row meets. */
export async function selectDynamicGroupsHolding(db: Db, deviceId: string, dynamic: { sql: string; params: Params }) {
  const { rows } = await db.query<{ id: string }>(
    `SELECT g.id FROM device_groups g JOIN devices d ON d.id = :deviceId::uuid
      WHERE g.org_id = d.org_id AND g.type = 'dynamic' AND (g.site_id IS NULL OR g.site_id = d.site_id)
        AND coalesce(${dynamic.sql}, false)`,
    { ...dynamic.params, deviceId },
  );
  return rows.map((row) => row.id);
}

/** The filters of an organization's dynamic groups. */
export async function selectDynamicFiltersOfOrganization(db: Db, orgId: string) {
  const { rows } = await db.query<{ id: string; filter: DeviceFilter }>(
    `SELECT g.id, g.filter FROM device_groups g WHERE g.org_id = :orgId::uuid AND g.type = 'dynamic'`,
    { orgId },
  );
  return rows;
}

export type SummaryRow = {
  deviceId: string;
  osType: string | null;
  openAlerts: number;
  groups: { id: string; name: string; type: 'static' | 'dynamic' }[];
};

/**
 * For each live device of `deviceIds` in the organization (others are left out): its open alerts and its groups,
 * static and dynamic, in one statement (`dynamic.sql` decides the dynamic groups of the device row `d`).
 */
export async function selectDeviceSummaries(
  db: Db,
  orgId: string,
  deviceIds: readonly string[],
  dynamic: { sql: string; params: Params },
) {
  const { rows } = await db.query<SummaryRow>(
    `SELECT d.id AS "deviceId", d.os_type AS "osType",
            (SELECT count(*) FROM alerts a WHERE a.device_id = d.id AND a.org_id = d.org_id AND a.status = 'open')::int
              AS "openAlerts",
            coalesce((SELECT jsonb_agg(jsonb_build_object('id', g.id, 'name', g.name, 'type', g.type)
                                       ORDER BY lower(g.name), g.id)
                        FROM device_groups g
                       WHERE g.org_id = d.org_id AND (g.site_id IS NULL OR g.site_id = d.site_id)
                         AND CASE WHEN g.type = 'static'
                                  THEN EXISTS (SELECT 1 FROM device_group_members m
                                                WHERE m.group_id = g.id AND m.device_id = d.id)
                                  ELSE coalesce(${dynamic.sql}, false) END), '[]'::jsonb) AS groups
       FROM devices d
      WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL
        AND d.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))`,
    { ...dynamic.params, orgId, deviceIds: JSON.stringify(deviceIds) },
  );
  return rows;
}
