import type { Principal } from '../auth/principal.ts';
import { tenantParams } from '../auth/tenancy.ts';
import { type Db, one, type Params, type Tx } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { DeviceFilter } from '../device-groups/filter.ts';
import type { Candidate, Exemption, PolicyItem } from './resolve.ts';
import type { AssignmentLevel, PolicyKind } from './schemas.ts';

/** Who changed something, as it was then. */
export type Actor = { actorType: string; id: string; email: string | null; name: string | null };

export type PolicyRow = {
  id: string;
  kind: PolicyKind;
  name: string;
  partnerId: string;
  orgId: string | null;
  availability: 'partner' | 'organization';
  version: number;
  items: PolicyItem[];
  createdAt: Date;
  updatedAt: Date;
};

const policyColumns = `p.id, p.kind, p.name, p.partner_id AS "partnerId", p.org_id AS "orgId",
  CASE WHEN p.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability, p.version, p.items,
  p.created_at AS "createdAt", p.updated_at AS "updatedAt"`;

/**
 * A live policy the principal reaches: a platform caller every one; a partner's caller the partner's; an
 * organization's caller its organization's and its partner's library (which apply to it). A policy of a deleted
 * organization is gone with it.
 */
const reachablePolicy = `p.deleted_at IS NULL
  AND (p.org_id IS NULL OR EXISTS (SELECT 1 FROM organizations po WHERE po.id = p.org_id AND po.deleted_at IS NULL))
  AND (:tenantScope::text = 'platform'
       OR (:tenantScope::text = 'partner' AND p.partner_id = :tenantPartnerId::uuid)
       OR (:tenantScope::text = 'organization'
           AND (p.org_id = :tenantOrgId::uuid
                OR (p.org_id IS NULL
                    AND p.partner_id = (SELECT to_.partner_id FROM organizations to_ WHERE to_.id = :tenantOrgId::uuid)))))`;

export function selectPolicy(db: Db, principal: Principal, id: string) {
  return one<PolicyRow>(db, `SELECT ${policyColumns} FROM policies p WHERE p.id = :id::uuid AND ${reachablePolicy}`, {
    id,
    ...tenantParams(principal),
  });
}

/** The policy locked until commit, so changes of one policy (its version above all) take turns. */
export function lockPolicy(tx: Tx, id: string) {
  return one<PolicyRow>(
    tx,
    `SELECT ${policyColumns} FROM policies p WHERE p.id = :id::uuid AND p.deleted_at IS NULL FOR UPDATE`,
    { id },
  );
}

export function selectPolicies(
  db: Db,
  principal: Principal,
  filter: { kind?: string; orgId?: string; availability?: string },
  page: Page,
) {
  return selectPage<PolicyRow>(
    db,
    policyColumns,
    `policies p WHERE ${reachablePolicy}
       AND (:kind::text IS NULL OR p.kind = :kind::text)
       AND (:orgId::uuid IS NULL OR p.org_id = :orgId::uuid)
       AND (:availability::text IS NULL OR (p.org_id IS NULL) = (:availability::text = 'partner'))`,
    'lower(p.name), p.id',
    {
      ...tenantParams(principal),
      kind: filter.kind ?? null,
      orgId: filter.orgId ?? null,
      availability: filter.availability ?? null,
    },
    page,
  );
}

export async function insertPolicy(
  tx: Tx,
  policy: { partnerId: string; orgId: string | null; kind: PolicyKind; name: string; items: PolicyItem[] },
  actor: Actor,
) {
  const row = await one<PolicyRow>(
    tx,
    `WITH p AS (
       INSERT INTO policies (partner_id, org_id, kind, name, items, created_by)
       VALUES (:partnerId::uuid, :orgId::uuid, :kind::text, :name::text, :items::jsonb, :actor::jsonb)
       RETURNING *),
     v AS (
       INSERT INTO policy_versions (policy_id, version, name, items, created_by)
       SELECT id, version, name, items, created_by FROM p)
     SELECT ${policyColumns} FROM p`,
    { ...policy, items: policy.items as Record<string, unknown>[], actor: { ...actor } },
  );
  return row!;
}

/** Changes name and items; a change of the items is a new version, kept in policy_versions. */
export async function updatePolicyRow(
  tx: Tx,
  id: string,
  change: { name?: string; items?: PolicyItem[] },
  actor: Actor,
) {
  const row = await one<PolicyRow>(
    tx,
    `WITH p AS (
       UPDATE policies SET name = coalesce(:name::text, name), items = coalesce(:items::jsonb, items),
              version = version + CASE WHEN :items::jsonb IS NOT NULL AND :items::jsonb IS DISTINCT FROM items THEN 1 ELSE 0 END,
              updated_at = now()
        WHERE id = :id::uuid AND deleted_at IS NULL
        RETURNING *),
     v AS (
       INSERT INTO policy_versions (policy_id, version, name, items, created_by)
       SELECT id, version, name, items, :actor::jsonb FROM p
       ON CONFLICT (policy_id, version) DO UPDATE SET name = EXCLUDED.name)
     SELECT ${policyColumns} FROM p`,
    { id, name: change.name ?? null, items: (change.items as Record<string, unknown>[]) ?? null, actor: { ...actor } },
  );
  return row;
}

/** Soft delete: its assignments, exemptions and monitor states go; its versions stay for the alerts naming them. */
export async function deletePolicyRow(tx: Tx, id: string) {
  await tx.query('DELETE FROM policy_assignments WHERE policy_id = :id::uuid', { id });
  await tx.query('DELETE FROM policy_exemptions WHERE policy_id = :id::uuid', { id });
  await tx.query('DELETE FROM monitor_states WHERE policy_id = :id::uuid', { id });
  const { rowCount } = await tx.query(
    'UPDATE policies SET deleted_at = now() WHERE id = :id::uuid AND deleted_at IS NULL',
    { id },
  );
  return rowCount > 0;
}

export function selectVersions(db: Db, policyId: string, page: Page) {
  return selectPage<{ version: number; name: string; items: PolicyItem[]; createdAt: Date }>(
    db,
    'v.version, v.name, v.items, v.created_at AS "createdAt"',
    'policy_versions v WHERE v.policy_id = :policyId::uuid',
    'v.version DESC',
    { policyId },
    page,
  );
}

// Targets

/** The live target of an assignment or exemption: its organization (none for a partner) and partner. */
export function selectTarget(db: Db, level: AssignmentLevel, targetId: string) {
  const sql: Record<AssignmentLevel, string> = {
    partner: `SELECT NULL::uuid AS "orgId", id AS "partnerId", NULL::uuid AS "siteId"
                FROM partners WHERE id = :targetId::uuid`,
    organization: `SELECT id AS "orgId", partner_id AS "partnerId", NULL::uuid AS "siteId"
                     FROM organizations WHERE id = :targetId::uuid AND deleted_at IS NULL`,
    site: `SELECT s.org_id AS "orgId", o.partner_id AS "partnerId", s.id AS "siteId"
             FROM sites s JOIN organizations o ON o.id = s.org_id AND o.deleted_at IS NULL
            WHERE s.id = :targetId::uuid AND s.deleted_at IS NULL`,
    group: `SELECT g.org_id AS "orgId", o.partner_id AS "partnerId", g.site_id AS "siteId"
              FROM device_groups g JOIN organizations o ON o.id = g.org_id AND o.deleted_at IS NULL
             WHERE g.id = :targetId::uuid`,
    device: `SELECT d.org_id AS "orgId", o.partner_id AS "partnerId", d.site_id AS "siteId"
               FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
              WHERE d.id = :targetId::uuid AND d.deleted_at IS NULL`,
  };
  return one<{ orgId: string | null; partnerId: string; siteId: string | null }>(db, sql[level], { targetId });
}

// Assignments

export type AssignmentRow = {
  id: string;
  policyId: string;
  level: AssignmentLevel;
  targetId: string;
  orgId: string | null;
  priority: number;
  osTypes: string[] | null;
  roles: ('workstation' | 'server')[] | null;
  createdAt: Date;
};
const assignmentColumns = `a.id, a.policy_id AS "policyId", a.level, a.target_id AS "targetId", a.org_id AS "orgId",
  a.priority, a.os_types AS "osTypes", a.roles, a.created_at AS "createdAt"`;

/** The new assignment; undefined when the policy is already assigned to that target. */
export function insertAssignment(
  tx: Tx,
  a: {
    policyId: string;
    partnerId: string;
    orgId: string | null;
    kind: PolicyKind;
    level: AssignmentLevel;
    targetId: string;
    priority: number;
    osTypes: string[] | null;
    roles: string[] | null;
  },
  actor: Actor,
) {
  return one<AssignmentRow>(
    tx,
    `INSERT INTO policy_assignments AS a (policy_id, partner_id, org_id, kind, level, target_id, priority, os_types, roles,
                                          created_by)
     VALUES (:policyId::uuid, :partnerId::uuid, :orgId::uuid, :kind::text, :level::text, :targetId::uuid,
             :priority::int, :osTypes::jsonb, :roles::jsonb, :actor::jsonb)
     ON CONFLICT (policy_id, level, target_id) DO NOTHING
     RETURNING ${assignmentColumns}`,
    { ...a, osTypes: a.osTypes, roles: a.roles, actor: { ...actor } },
  );
}

/**
 * The policy's assignments an organization's caller may see: its own organization's (the partner's and other
 * organizations' are not theirs to know).
 */
export function selectAssignments(db: Db, policyId: string, orgOnly: string | null, page: Page) {
  return selectPage<AssignmentRow>(
    db,
    assignmentColumns,
    `policy_assignments a WHERE a.policy_id = :policyId::uuid AND (:orgOnly::uuid IS NULL OR a.org_id = :orgOnly::uuid)`,
    'a.created_at, a.id',
    { policyId, orgOnly },
    page,
  );
}

/** Every assignment of a policy, as its changes are evaluated for (the system reads them: no tenancy). */
export async function selectAssignmentTargets(db: Db, policyId: string) {
  const { rows } = await db.query<{ id: string; level: AssignmentLevel; targetId: string }>(
    `SELECT a.id, a.level, a.target_id AS "targetId" FROM policy_assignments a
      WHERE a.policy_id = :policyId::uuid ORDER BY a.created_at, a.id`,
    { policyId },
  );
  return rows;
}

export function selectAssignment(db: Db, id: string) {
  return one<AssignmentRow>(db, `SELECT ${assignmentColumns} FROM policy_assignments a WHERE a.id = :id::uuid`, {
    id,
  });
}

export async function deleteAssignmentRow(tx: Tx, id: string) {
  const { rowCount } = await tx.query('DELETE FROM policy_assignments WHERE id = :id::uuid', { id });
  return rowCount > 0;
}

// Exemptions

export type ExemptionRow = {
  id: string;
  policyId: string;
  itemKey: string;
  level: 'site' | 'group' | 'device';
  targetId: string;
  orgId: string;
  reason: string;
  createdBy: Record<string, unknown> | null;
  createdAt: Date;
};
const exemptionColumns = `e.id, e.policy_id AS "policyId", e.item_key AS "itemKey", e.level, e.target_id AS "targetId",
  e.org_id AS "orgId", e.reason, e.created_by AS "createdBy", e.created_at AS "createdAt"`;

export function insertExemption(
  tx: Tx,
  e: {
    policyId: string;
    partnerId: string;
    orgId: string;
    itemKey: string;
    level: string;
    targetId: string;
    reason: string;
  },
  actor: Actor,
) {
  return one<ExemptionRow>(
    tx,
    `INSERT INTO policy_exemptions AS e (policy_id, partner_id, org_id, item_key, level, target_id, reason, created_by)
     VALUES (:policyId::uuid, :partnerId::uuid, :orgId::uuid, :itemKey::text, :level::text, :targetId::uuid,
             :reason::text, :actor::jsonb)
     ON CONFLICT (policy_id, item_key, level, target_id) DO NOTHING
     RETURNING ${exemptionColumns}`,
    { ...e, actor: { ...actor } },
  );
}

export function selectExemptions(db: Db, policyId: string, orgOnly: string | null, page: Page) {
  return selectPage<ExemptionRow>(
    db,
    exemptionColumns,
    `policy_exemptions e WHERE e.policy_id = :policyId::uuid AND (:orgOnly::uuid IS NULL OR e.org_id = :orgOnly::uuid)`,
    'e.created_at, e.id',
    { policyId, orgOnly },
    page,
  );
}

export function selectExemption(db: Db, id: string) {
  return one<ExemptionRow>(db, `SELECT ${exemptionColumns} FROM policy_exemptions e WHERE e.id = :id::uuid`, { id });
}

export async function deleteExemptionRow(tx: Tx, id: string) {
  const { rowCount } = await tx.query('DELETE FROM policy_exemptions WHERE id = :id::uuid', { id });
  return rowCount > 0;
}

// Inheritance

/** Whether an automation policy of the partner is assigned anywhere (an inheritance block can change what applies). */
export async function automationPoliciesAssigned(db: Db, partnerId: string): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 FROM policies p JOIN policy_assignments pa ON pa.policy_id = p.id
      WHERE p.partner_id = :partnerId::uuid AND p.kind = 'automation' AND p.deleted_at IS NULL LIMIT 1`,
    { partnerId },
  );
  return row !== undefined;
}

/** Sets the block; the value before, or undefined when the organization (or its site) is gone. */
export function updateInheritance(tx: Tx, orgId: string, siteId: string | null, block: boolean) {
  return one<{ before: boolean }>(
    tx,
    siteId === null
      ? `UPDATE organizations o SET policy_inheritance_blocked = :block::boolean
           FROM (SELECT policy_inheritance_blocked AS before FROM organizations WHERE id = :orgId::uuid FOR UPDATE) b
          WHERE o.id = :orgId::uuid AND o.deleted_at IS NULL RETURNING b.before`
      : `UPDATE sites s SET policy_inheritance_blocked = :block::boolean
           FROM (SELECT policy_inheritance_blocked AS before FROM sites WHERE id = :siteId::uuid FOR UPDATE) b
          WHERE s.id = :siteId::uuid AND s.org_id = :orgId::uuid AND s.deleted_at IS NULL RETURNING b.before`,
    { orgId, siteId, block },
  );
}

// The resolver's reads

export type DeviceRowFacts = {
  id: string;
  orgId: string;
  partnerId: string;
  siteId: string;
  osType: string | null;
  role: string | null;
  hostname: string;
  orgBlocked: boolean;
  siteBlocked: boolean;
};

type CandidateRow = Omit<Candidate, 'items'> & {
  items: PolicyItem[];
  groupType: 'static' | 'dynamic' | null;
  groupFilter: DeviceFilter | null;
  groupSiteId: string | null;
  staticMember: boolean;
};

export type ExemptionRef = Exemption & {
  groupType: 'static' | 'dynamic' | null;
  groupFilter: DeviceFilter | null;
  groupSiteId: string | null;
  staticMember: boolean;
};

/**
 * A live device, the assignments of one kind that could reach it and its organization's exemptions of that kind, in
 * one statement: the partner's assignments, its organization's, its site's, its own, and every group assignment of
 * its organization with what decides the membership (static member row, or the dynamic group's filter to evaluate).
 */
export async function selectCandidates(db: Db, deviceId: string, kind: PolicyKind) {
  return (await selectCandidatesOfDevices(db, [deviceId], kind)).get(deviceId);
}

/**
 * selectCandidates for many live devices in one statement: each device with the assignments of one kind that could
 * reach it and its organization's exemptions of that kind (devices that are not live are left out).
 */
export async function selectCandidatesOfDevices(db: Db, deviceIds: readonly string[], kind: PolicyKind) {
  const { found } = await candidatesOf(
    db,
    {
      join: '',
      where: `d.id IN (SELECT (v #>> '{}')::uuid FROM jsonb_array_elements(:deviceIds::jsonb) v)`,
      agentId: 'NULL::uuid',
    },
    { deviceIds: [...deviceIds], kind },
  );
  return found;
}

/**
 * The agent whose token hash this is (not revoked, its device and organization live) and its device's candidates of
 * one kind, in one statement: an agent's request authenticated and its policies read together.
 */
export async function selectCandidatesByToken(db: Db, tokenHash: string, kind: PolicyKind) {
  const { found, agentId } = await candidatesOf(
    db,
    {
      join: 'JOIN agents a ON a.device_id = d.id',
      where: 'a.token_hash = :hash::text AND a.revoked_at IS NULL',
      agentId: 'a.id',
    },
    { hash: tokenHash, kind },
  );
  const [entry] = found.values();
  return entry && agentId ? { agentId, ...entry } : undefined;
}

type CandidatesFound = Map<string, { device: DeviceRowFacts; candidates: CandidateRow[]; exemptions: ExemptionRef[] }>;

/** The live devices the `where` condition (over devices d and the `join`) picks, each with its candidates. */
async function candidatesOf(
  db: Db,
  devices: { join: string; where: string; agentId: string },
  params: Params & { kind: PolicyKind },
): Promise<{ found: CandidatesFound; agentId: string | undefined }> {
  const found: CandidatesFound = new Map();
  if (Array.isArray(params.deviceIds) && params.deviceIds.length === 0) return { found, agentId: undefined };
  const { rows } = await db.query<
    DeviceRowFacts & { agentId: string | null; candidate: CandidateRow | null; exemptions: ExemptionRef[] }
  >(
    `WITH dev AS (
       SELECT d.id, d.org_id, o.partner_id, d.site_id, d.os_type, d.role, d.hostname, ${devices.agentId} AS agent_id,
              o.policy_inheritance_blocked AS org_blocked, s.policy_inheritance_blocked AS site_blocked,
              (SELECT coalesce(jsonb_agg(jsonb_build_object(
                        'id', e.id, 'policyId', e.policy_id, 'itemKey', e.item_key, 'level', e.level,
                        'targetId', e.target_id, 'reason', e.reason, 'groupType', eg.type, 'groupFilter', eg.filter,
                        'groupSiteId', eg.site_id,
                        'staticMember', coalesce(eg.type = 'static' AND EXISTS (
                          SELECT 1 FROM device_group_members m WHERE m.group_id = eg.id AND m.device_id = d.id),
                          false)) ORDER BY e.id), '[]')
                 FROM policy_exemptions e
                 JOIN policies ep ON ep.id = e.policy_id AND ep.kind = :kind::text AND ep.deleted_at IS NULL
                 LEFT JOIN device_groups eg ON e.level = 'group' AND eg.id = e.target_id
                WHERE e.org_id = d.org_id) AS exemptions
         FROM devices d
         JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
         JOIN sites s ON s.id = d.site_id
         ${devices.join}
        WHERE ${devices.where}
          AND d.deleted_at IS NULL)
     SELECT d.id, d.org_id AS "orgId", d.partner_id AS "partnerId", d.site_id AS "siteId", d.os_type AS "osType",
            d.role, d.hostname, d.org_blocked AS "orgBlocked", d.site_blocked AS "siteBlocked", d.exemptions,
            d.agent_id AS "agentId",
            CASE WHEN a.id IS NOT NULL THEN jsonb_build_object(
              'assignmentId', a.id, 'policyId', p.id, 'policyName', p.name, 'policyVersion', p.version,
              'level', a.level, 'targetId', a.target_id, 'priority', a.priority, 'createdAt', a.created_at,
              'osTypes', a.os_types, 'roles', a.roles, 'items', p.items, 'groupType', g.type, 'groupFilter', g.filter,
              'groupSiteId', g.site_id,
              'staticMember', g.type = 'static' AND EXISTS (
                SELECT 1 FROM device_group_members m WHERE m.group_id = g.id AND m.device_id = d.id))
            END AS candidate
       FROM dev d
       LEFT JOIN (policy_assignments a JOIN policies p ON p.id = a.policy_id AND p.deleted_at IS NULL)
         ON a.partner_id = d.partner_id AND a.kind = :kind::text AND (a.org_id IS NULL OR a.org_id = d.org_id)
        AND (a.level IN ('partner', 'group') OR (a.level = 'organization' AND a.target_id = d.org_id)
             OR (a.level = 'site' AND a.target_id = d.site_id) OR (a.level = 'device' AND a.target_id = d.id))
       LEFT JOIN device_groups g ON a.level = 'group' AND g.id = a.target_id
      ORDER BY d.id, a.id`,
    params,
  );
  let agentId: string | undefined;
  for (const { candidate, exemptions, agentId: agent, ...device } of rows) {
    agentId ??= agent ?? undefined;
    let entry = found.get(device.id);
    if (!entry) {
      entry = { device, candidates: [], exemptions };
      found.set(device.id, entry);
    }
    if (candidate) entry.candidates.push({ ...candidate, createdAt: new Date(candidate.createdAt) });
  }
  return { found, agentId };
}

/** Which dynamic groups' filters each device's row matches now, for (device, group) pairs, in one statement. */
export async function matchingDynamicGroupsOfDevices(
  db: Db,
  pairs: { deviceId: string; groupId: string }[],
  membership: { sql: string; params: Params },
) {
  if (pairs.length === 0) return [];
  const { rows } = await db.query<{ deviceId: string; groupId: string }>(
    `SELECT d.id AS "deviceId", g.id AS "groupId"
       FROM jsonb_to_recordset(:pairs::jsonb) AS x ("deviceId" uuid, "groupId" uuid)
       JOIN devices d ON d.id = x."deviceId" JOIN device_groups g ON g.id = x."groupId"
       LEFT JOIN agents a ON a.device_id = d.id
      WHERE coalesce(${membership.sql}, false)`,
    { ...membership.params, pairs: pairs as never },
  );
  return rows;
}

/** Which of these dynamic groups' filters the device's row matches now, in one statement. */
export async function matchingDynamicGroups(
  db: Db,
  deviceId: string,
  groups: { id: string; sql: string }[],
  params: Record<string, string | number | boolean>,
) {
  if (groups.length === 0) return [];
  const row = await one<{ ids: string[] }>(
    db,
    `SELECT array_remove(ARRAY[${groups.map((g, i) => `CASE WHEN coalesce(${g.sql}, false) THEN :g${i}::text END`).join(', ')}], NULL) AS ids
       FROM devices d LEFT JOIN agents a ON a.device_id = d.id WHERE d.id = :deviceId::uuid`,
    { ...params, ...Object.fromEntries(groups.map((g, i) => [`g${i}`, g.id])), deviceId },
  );
  return row?.ids ?? [];
}

/** Whether a live partner automation (availability partner) of the owner's partner has this id. */
export async function partnerAutomationExists(db: Db, automationId: string, owner: { partnerId: string }) {
  const row = await one(
    db,
    `SELECT 1 FROM automations WHERE id = :automationId::uuid AND partner_id = :partnerId::uuid AND org_id IS NULL
        AND deleted_at IS NULL`,
    { automationId, partnerId: owner.partnerId },
  );
  return row !== undefined;
}

/** The live devices an assignment's target can reach (a group's: its organization's), at most `limit`. */
export async function selectTargetDevices(
  db: Db,
  partnerId: string,
  level: AssignmentLevel,
  targetId: string,
  limit: number,
) {
  const { rows } = await db.query<{ id: string; orgId: string }>(
    `SELECT d.id, d.org_id AS "orgId" FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.deleted_at IS NULL AND o.partner_id = :partnerId::uuid
        AND CASE :level::text WHEN 'partner' THEN true
                              WHEN 'organization' THEN d.org_id = :targetId::uuid
                              WHEN 'site' THEN d.site_id = :targetId::uuid
                              WHEN 'device' THEN d.id = :targetId::uuid
                              ELSE d.org_id = (SELECT g.org_id FROM device_groups g WHERE g.id = :targetId::uuid) END
      ORDER BY d.id LIMIT :limit::int`,
    { partnerId, level, targetId, limit },
  );
  return rows;
}
