/**
 * Rings live in the items of patching policies. Which policy a device follows is the one resolver's answer
 * (shared/policies, the whole policy wins); inside it the device belongs to the first ring (lowest order) whose groups
 * hold it, else to the last ring. A patch enters a ring once it is approved for the device's organization and that
 * ring, due (its release date, or when the catalogue first saw it, plus the ring's deferral) and, past the first ring,
 * through the previous ring's promotion gate (or promoted by hand).
 */
import type { Db } from '../db/db.ts';
import { one, prepared } from '../db/db.ts';
import type { DeviceFilter } from '../device-groups/filter.ts';
import { filterCondition } from '../device-groups/groups.ts';
import { dynamicGroupsHolding } from '../device-groups/membership.ts';
import { effectivePoliciesOf, effectivePoliciesOfDevices } from '../policies/effective.ts';
import type { PolicyItem } from '../policies/resolve.ts';
import type { ApprovalRuleItem, RingItem } from '../policies/schemas.ts';

export type Ring = RingItem & { id: string };

/** A ring with its policy, as stored now. */
export interface RingOfPolicy {
  ring: Ring;
  policyId: string;
  policyName: string;
  policyVersion: number;
  partnerId: string;
  orgId: string | null;
  rings: Ring[];
  rules: ApprovalRuleItem[];
  paused: boolean;
}

export const ringsOf = (items: readonly PolicyItem[]) =>
  (items.filter((i) => i.type === 'ring') as unknown as Ring[]).sort((a, b) => a.order - b.order);
export const rulesOf = (items: readonly PolicyItem[]) =>
  items.filter((i) => i.type === 'approval-rule') as unknown as ApprovalRuleItem[];

/** The ring before this one in its policy (the one whose gate it waits on), or undefined for the first. */
export const previousRing = (rings: readonly Ring[], ring: Ring) => rings.filter((r) => r.order < ring.order).at(-1);
export const nextRing = (rings: readonly Ring[], ring: Ring) => rings.find((r) => r.order > ring.order);

/** The live patching policy holding the ring, or undefined. */
export async function ringById(db: Db, ringId: string): Promise<RingOfPolicy | undefined> {
  const row = await one<{
    policyId: string;
    policyName: string;
    policyVersion: number;
    partnerId: string;
    orgId: string | null;
    items: PolicyItem[];
    paused: boolean | null;
  }>(
    db,
    `SELECT p.id AS "policyId", p.name AS "policyName", p.version AS "policyVersion", p.partner_id AS "partnerId",
            p.org_id AS "orgId", p.items, s.paused
       FROM policies p LEFT JOIN patch_ring_states s ON s.ring_id = :ringId::uuid
      WHERE p.kind = 'patching' AND p.deleted_at IS NULL
        AND p.items @> jsonb_build_array(jsonb_build_object('type', 'ring', 'id', :ringId::text))`,
    { ringId },
  );
  if (!row) return undefined;
  const rings = ringsOf(row.items);
  const ring = rings.find((r) => r.id === ringId);
  if (!ring) return undefined;
  const { items, paused, ...policy } = row;
  return { ...policy, ring, rings, rules: rulesOf(items), paused: paused ?? false };
}

/** Which of `groupIds` hold the device now: static groups by their member rows, dynamic ones by their filters. */
async function groupsHolding(db: Db, deviceId: string, groupIds: readonly string[]): Promise<Set<string>> {
  if (groupIds.length === 0) return new Set();
  const { rows } = await db.query<{ id: string; type: string; filter: DeviceFilter | null; member: boolean }>(
    `SELECT g.id, g.type, g.filter,
            EXISTS (SELECT 1 FROM device_group_members m WHERE m.group_id = g.id AND m.device_id = :deviceId::uuid) AS member
       FROM device_groups g WHERE g.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:groupIds::jsonb))`,
    { deviceId, groupIds: [...groupIds] },
  );
  const held = new Set(rows.filter((r) => r.type === 'static' && r.member).map((r) => r.id));
  const dynamic = rows.filter((r) => r.type === 'dynamic' && r.filter) as { id: string; filter: DeviceFilter }[];
  for (const id of await dynamicGroupsHolding(db, deviceId, dynamic)) held.add(id);
  return held;
}

/** The ring of a device among its policy's rings: the first whose groups hold it, else the last. */
export async function ringOfDevice(db: Db, deviceId: string, rings: readonly Ring[]): Promise<Ring | undefined> {
  if (rings.length === 0) return undefined;
  const held = await groupsHolding(
    db,
    deviceId,
    rings.flatMap((r) => r.groupIds),
  );
  return rings.find((r) => r.groupIds.some((g) => held.has(g))) ?? rings.at(-1);
}

export interface DevicePatching {
  deviceId: string;
  orgId: string;
  partnerId: string;
  hostname: string;
  policyId: string | null;
  ring: Ring | undefined;
  rules: ApprovalRuleItem[];
}

/** The patching policy a live device follows (the one resolver, whole policy) and its ring in it. */
export async function patchingOfDevice(db: Db, deviceId: string): Promise<DevicePatching | undefined> {
  const resolved = await effectivePoliciesOf(db, deviceId, 'patching');
  if (!resolved) return undefined;
  const { device, effective } = resolved;
  const items = effective.items.map((i) => i.item);
  const ring = await ringOfDevice(db, device.id, ringsOf(items));
  return {
    deviceId: device.id,
    orgId: device.orgId,
    partnerId: device.partnerId,
    hostname: device.hostname,
    policyId: effective.items[0]?.origin.policyId ?? null,
    ring,
    rules: rulesOf(items),
  };
}

const uniformitySql = prepared(
  'patching_orgs_uniformity',
  `SELECT o.id AS "orgId", c.candidates, c.varying,
          (SELECT count(*)::int FROM policy_exemptions e
             JOIN policies p ON p.id = e.policy_id AND p.kind = 'patching' AND p.deleted_at IS NULL
            WHERE e.org_id = o.id) AS exemptions,
          EXISTS (SELECT 1 FROM sites s WHERE s.org_id = o.id AND s.policy_inheritance_blocked) AS "siteBlocked",
          (SELECT d.id FROM devices d WHERE d.org_id = o.id AND d.deleted_at IS NULL ORDER BY d.id LIMIT 1)
            AS "firstDeviceId"
     FROM organizations o
     CROSS JOIN LATERAL (
       SELECT count(*)::int AS candidates,
              count(*) FILTER (WHERE a.level NOT IN ('partner', 'organization')
                                  OR a.os_types IS NOT NULL OR a.roles IS NOT NULL)::int AS varying
         FROM policy_assignments a JOIN policies p ON p.id = a.policy_id AND p.deleted_at IS NULL
        WHERE a.partner_id = o.partner_id AND a.kind = 'patching' AND (a.org_id IS NULL OR a.org_id = o.id)) c
    WHERE o.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb))`,
);

type Uniformity = 'none' | 'uniform' | 'per-device';

/**
 * Whether every live device of each organization meets the same patching candidates: only partner- and
 * organization-level assignments of patching policies reach it, none narrowed by OS type or role, no patching
 * exemption is made in it and none of its sites blocks inheritance. Then the one resolver's answer for one of its
 * devices is its answer for each; `none` when no patching assignment reaches it at all, or it has no live device.
 * With each, its first live device. One statement for all.
 */
async function organizationsUniformity(db: Db, orgIds: readonly string[]) {
  const found = new Map<string, { uniformity: Uniformity; firstDeviceId: string | null }>();
  if (orgIds.length === 0) return found;
  const { rows } = await db.query<{
    orgId: string;
    candidates: number;
    varying: number;
    exemptions: number;
    siteBlocked: boolean;
    firstDeviceId: string | null;
  }>(uniformitySql, { orgIds: [...orgIds] });
  for (const row of rows) {
    const uniformity =
      row.candidates === 0 || !row.firstDeviceId
        ? 'none'
        : row.varying === 0 && row.exemptions === 0 && !row.siteBlocked
          ? 'uniform'
          : 'per-device';
    found.set(row.orgId, { uniformity, firstDeviceId: row.firstDeviceId });
  }
  return found;
}

/** The groups rings name: their type, a dynamic group's filter and site. */
async function ringGroups(db: Db, groupIds: string[]) {
  const { rows } = await db.query<{ id: string; type: string; filter: DeviceFilter | null; siteId: string | null }>(
    `SELECT g.id, g.type, g.filter, g.site_id AS "siteId" FROM device_groups g
      WHERE g.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:groupIds::jsonb))`,
    { groupIds },
  );
  return rows;
}

/**
 * The ring of each device among a policy's rings, in a statement for the static groups' members and one per dynamic
 * group the rings name (its filter evaluated over these devices): the first ring whose groups hold it, else the last.
 */
async function ringsOfDevices(db: Db, deviceIds: readonly string[], rings: readonly Ring[]) {
  const held = new Map<string, Set<string>>(deviceIds.map((id) => [id, new Set()]));
  const groupIds = [...new Set(rings.flatMap((r) => r.groupIds))];
  if (groupIds.length > 0 && deviceIds.length > 0) {
    const ids = { groupIds, deviceIds: [...deviceIds] };
    const groups = await ringGroups(db, groupIds);
    const { rows: members } = await db.query<{ deviceId: string; groupId: string }>(
      `SELECT m.device_id AS "deviceId", m.group_id AS "groupId" FROM device_group_members m
        WHERE m.group_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:groupIds::jsonb))
          AND m.device_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))`,
      ids,
    );
    for (const m of members) held.get(m.deviceId)?.add(m.groupId);
    for (const group of groups.filter((g) => g.type === 'dynamic' && g.filter)) {
      const condition = filterCondition(group.filter!);
      const { rows } = await db.query<{ id: string }>(
        `SELECT d.id FROM devices d LEFT JOIN agents a ON a.device_id = d.id
          WHERE d.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))
            AND d.org_id = (SELECT org_id FROM device_groups WHERE id = :groupId::uuid)
            AND (:siteId::uuid IS NULL OR d.site_id = :siteId::uuid) AND coalesce(${condition.sql}, false)`,
        { ...condition.params, deviceIds: ids.deviceIds, groupId: group.id, siteId: group.siteId },
      );
      for (const r of rows) held.get(r.id)?.add(group.id);
    }
  }
  return new Map(
    deviceIds.map((id) => [id, rings.find((r) => r.groupIds.some((g) => held.get(id)!.has(g))) ?? rings.at(-1)]),
  );
}

/** What patching each live device of one organization follows (see organizationsUniformity), in its order. */
export async function patchingOfOrganization(
  db: Db,
  org: { orgId: string; partnerId: string },
  devices: readonly { id: string; hostname: string }[],
): Promise<(DevicePatching | undefined)[]> {
  const uniformity = (await organizationsUniformity(db, [org.orgId])).get(org.orgId)?.uniformity;
  if (uniformity === 'per-device') return inParallel(devices, 8, (d) => patchingOfDevice(db, d.id));
  const resolved =
    uniformity === 'uniform' && devices[0] ? await effectivePoliciesOf(db, devices[0].id, 'patching') : undefined;
  const items = resolved?.effective.items.map((i) => i.item) ?? [];
  const rings = ringsOf(items);
  const ringOf = await ringsOfDevices(
    db,
    devices.map((d) => d.id),
    rings,
  );
  return devices.map((d) => ({
    deviceId: d.id,
    orgId: org.orgId,
    partnerId: org.partnerId,
    hostname: d.hostname,
    policyId: resolved?.effective.items[0]?.origin.policyId ?? null,
    ring: ringOf.get(d.id),
    rules: rulesOf(items),
  }));
}

/**
 * What patching the live devices of one organization follow, as few rows as the organization allows: `policyId`,
 * `ring` and `rules` are those of every device not named in `devices`; `devices` names the others (those a ring
 * before the last holds by its groups, or, when the devices do not all meet the same assignments, every device).
 * The ring holders are read from the groups' members and filters over the organization, not from a list of devices.
 */
export interface OrganizationPatching {
  orgId: string;
  policyId: string | null;
  ring: Ring | undefined;
  rules: ApprovalRuleItem[];
  devices: { deviceId: string; policyId: string | null; ring: Ring | undefined; rules: ApprovalRuleItem[] }[];
}

export async function patchingPlanOf(db: Db, org: { orgId: string; partnerId: string }): Promise<OrganizationPatching> {
  return (await patchingPlansOf(db, [org.orgId]))[0]!;
}

/**
 * patchingPlanOf for many organizations (a partner's report), in their order, with a fixed number of statements
 * however many they are: one for their uniformity, one or two for the policy of each uniform one (the resolver over
 * one device of each), and the ring holders of all of them (see ringHoldersOf). An organization whose devices do not
 * all meet the same assignments is resolved device by device.
 */
export async function patchingPlansOf(db: Db, orgIds: readonly string[]): Promise<OrganizationPatching[]> {
  const none = (orgId: string) => ({ orgId, policyId: null, ring: undefined, rules: [], devices: [] });
  const facts = await organizationsUniformity(db, orgIds);
  const uniform = orgIds.flatMap((orgId) => {
    const fact = facts.get(orgId);
    return fact?.uniformity === 'uniform' && fact.firstDeviceId ? [{ orgId, deviceId: fact.firstDeviceId }] : [];
  });
  const resolved = await effectivePoliciesOfDevices(
    db,
    uniform.map((each) => each.deviceId),
    'patching',
  );
  const policies = new Map(
    uniform.map(({ orgId, deviceId }) => {
      const effective = resolved.get(deviceId)?.effective;
      const items = effective?.items.map((i) => i.item) ?? [];
      const policy = {
        policyId: effective?.items[0]?.origin.policyId ?? null,
        rings: ringsOf(items),
        rules: rulesOf(items),
      };
      return [orgId, policy];
    }),
  );
  const held = await ringHoldersOf(
    db,
    [...policies].map(([orgId, policy]) => ({ orgId, rings: policy.rings })),
  );
  return inParallel(orgIds, 4, async (orgId) => {
    const uniformity = facts.get(orgId)?.uniformity ?? 'none';
    if (uniformity === 'none') return none(orgId);
    if (uniformity === 'per-device') return perDevicePlan(db, orgId);
    const { policyId, rings, rules } = policies.get(orgId)!;
    const last = rings.at(-1);
    return {
      orgId,
      policyId,
      ring: last,
      rules,
      devices: [...(held.get(orgId) ?? [])]
        .filter(([, ring]) => ring !== last)
        .map(([deviceId, ring]) => ({ deviceId, policyId, ring, rules })),
    };
  });
}

/** The plan of an organization whose devices do not all meet the same assignments: each device resolved alone. */
async function perDevicePlan(db: Db, orgId: string): Promise<OrganizationPatching> {
  const { rows: devices } = await db.query<{ id: string }>(
    'SELECT id FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL ORDER BY id',
    { orgId },
  );
  const each = await inParallel(devices, 8, (d) => patchingOfDevice(db, d.id));
  return {
    orgId,
    policyId: null,
    ring: undefined,
    rules: [],
    devices: devices.map((d, i) => ({
      deviceId: d.id,
      policyId: each[i]?.policyId ?? null,
      ring: each[i]?.ring,
      rules: each[i]?.rules ?? [],
    })),
  };
}

/**
 * Per organization, its live devices that some ring of its policy holds by the ring's groups, each with the first
 * such ring (lowest order): one statement for the static groups' members of every organization, one per dynamic
 * group (its filter over its organization's devices).
 */
async function ringHoldersOf(db: Db, orgs: readonly { orgId: string; rings: readonly Ring[] }[]) {
  // The (organization, group) pairs to read: a group holds only devices of an organization whose rings name it.
  const pairs = orgs.flatMap(({ orgId, rings }) =>
    [...new Set(rings.flatMap((r) => r.groupIds))].map((groupId) => ({ orgId, groupId })),
  );
  const held = new Map<string, Map<string, Set<string>>>(orgs.map(({ orgId }) => [orgId, new Map()]));
  const hold = (orgId: string, deviceId: string, groupId: string) => {
    const devices = held.get(orgId)!;
    if (!devices.has(deviceId)) devices.set(deviceId, new Set());
    devices.get(deviceId)!.add(groupId);
  };
  if (pairs.length > 0) {
    const groups = await ringGroups(db, [...new Set(pairs.map((pair) => pair.groupId))]);
    const { rows: members } = await db.query<{ orgId: string; deviceId: string; groupId: string }>(
      `SELECT x."orgId", m.device_id AS "deviceId", m.group_id AS "groupId"
         FROM jsonb_to_recordset(:pairs::jsonb) AS x ("orgId" uuid, "groupId" uuid)
         JOIN device_group_members m ON m.group_id = x."groupId"
         JOIN devices d ON d.id = m.device_id AND d.org_id = x."orgId" AND d.deleted_at IS NULL`,
      { pairs: pairs as never },
    );
    for (const m of members) hold(m.orgId, m.deviceId, m.groupId);
    for (const group of groups.filter((g) => g.type === 'dynamic' && g.filter)) {
      const orgIds = pairs.filter((pair) => pair.groupId === group.id).map((pair) => pair.orgId);
      const condition = filterCondition(group.filter!);
      const { rows } = await db.query<{ id: string; orgId: string }>(
        `SELECT d.id, d.org_id AS "orgId" FROM devices d LEFT JOIN agents a ON a.device_id = d.id
          WHERE d.org_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb))
            AND d.deleted_at IS NULL AND d.org_id = (SELECT org_id FROM device_groups WHERE id = :groupId::uuid)
            AND (:siteId::uuid IS NULL OR d.site_id = :siteId::uuid) AND coalesce(${condition.sql}, false)`,
        { ...condition.params, orgIds, groupId: group.id, siteId: group.siteId },
      );
      for (const r of rows) hold(r.orgId, r.id, group.id);
    }
  }
  const rings = new Map(orgs.map(({ orgId, rings }) => [orgId, rings]));
  return new Map(
    [...held].map(([orgId, devices]) => [
      orgId,
      new Map(
        [...devices].map(([deviceId, groupIds]) => [
          deviceId,
          rings.get(orgId)!.find((r) => r.groupIds.some((g) => groupIds.has(g)))!,
        ]),
      ),
    ]),
  );
}

/** The live devices that could follow the policy: those of the organizations it is assigned in. */
export async function candidateDevices(db: Db, policy: { policyId: string; partnerId: string; orgId: string | null }) {
  const { rows } = await db.query<{ id: string; orgId: string; hostname: string }>(
    `SELECT d.id, d.org_id AS "orgId", d.hostname FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.deleted_at IS NULL AND o.partner_id = :partnerId::uuid
        AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)
        AND EXISTS (SELECT 1 FROM policy_assignments a
                     WHERE a.policy_id = :policyId::uuid AND (a.org_id IS NULL OR a.org_id = d.org_id))
      ORDER BY d.id`,
    policy,
  );
  return rows;
}

/** Runs `work` over `items`, `width` at a time. */
export async function inParallel<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>) {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}

/** The devices that follow this ring of this policy now. */
export async function ringDevices(db: Db, of: RingOfPolicy): Promise<DevicePatching[]> {
  const candidates = await candidateDevices(db, of);
  const byOrg = new Map<string, { id: string; hostname: string }[]>();
  for (const d of candidates) byOrg.set(d.orgId, [...(byOrg.get(d.orgId) ?? []), d]);
  const resolved: (DevicePatching | undefined)[] = [];
  for (const [orgId, devices] of byOrg)
    resolved.push(...(await patchingOfOrganization(db, { orgId, partnerId: of.partnerId }, devices)));
  return resolved.filter(
    (d): d is DevicePatching => d !== undefined && d.policyId === of.policyId && d.ring?.id === of.ring.id,
  );
}

// Approval

export type DecisionRow = {
  patchId: string;
  orgId: string | null;
  ringId: string | null;
  decision: 'approved' | 'declined' | 'deferred';
  until: Date | null;
};
export type Approval = 'approved' | 'declined' | 'deferred' | 'not-approved';

/**
 * A patch's approval for a device of `orgId` in `ringId`: the most specific manual decision (the organization's for
 * the ring, the organization's, the partner's for the ring, the partner's; a deferral past its date no longer counts)
 * overrides the rules; else any approval rule whose severities and categories both match approves it.
 */
export function approvalOf(
  patch: { id: string; severity: string; category: string },
  scope: { orgId: string; ringId: string | null },
  decisions: readonly DecisionRow[],
  rules: readonly ApprovalRuleItem[],
  now = Date.now(),
): Approval {
  const applicable = decisions
    .filter(
      (d) =>
        d.patchId === patch.id &&
        (d.orgId === null || d.orgId === scope.orgId) &&
        (d.ringId === null || d.ringId === scope.ringId) &&
        !(d.decision === 'deferred' && d.until && d.until.getTime() <= now),
    )
    .sort((a, b) => (b.orgId ? 2 : 0) + (b.ringId ? 1 : 0) - ((a.orgId ? 2 : 0) + (a.ringId ? 1 : 0)));
  const manual = applicable[0];
  if (manual) return manual.decision;
  const matches = rules.some(
    (rule) =>
      (!rule.severities || (rule.severities as string[]).includes(patch.severity)) &&
      (!rule.categories || (rule.categories as string[]).includes(patch.category)),
  );
  return matches ? 'approved' : 'not-approved';
}

/** The manual decisions that could apply to devices of an organization, for these patches (all when none given). */
export async function decisionsFor(db: Db, orgId: string, patchIds?: readonly string[]) {
  const { rows } = await db.query<DecisionRow>(
    `SELECT d.patch_id AS "patchId", d.org_id AS "orgId", d.ring_id AS "ringId", d.decision, d.until
       FROM patch_decisions d
      WHERE d.partner_id = (SELECT partner_id FROM organizations WHERE id = :orgId::uuid)
        AND (d.org_id IS NULL OR d.org_id = :orgId::uuid)
        AND (:patchIds::jsonb IS NULL OR d.patch_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:patchIds::jsonb)))`,
    { orgId, patchIds: patchIds ? [...patchIds] : null },
  );
  return rows.map((r) => ({ ...r, until: r.until ? new Date(r.until) : null }));
}

/** Whether the ring's deferral has passed for a patch: from its release date, or from when the catalogue first saw it. */
export const isDue = (patch: { releaseDate: Date | null; firstSeenAt: Date }, ring: Ring, now = Date.now()) =>
  (patch.releaseDate ?? patch.firstSeenAt).getTime() + ring.deferralDays * 86_400_000 <= now;

/** The install deadline of a patch in a ring: its due time plus the ring's deadline days. */
export const deadlineOf = (patch: { releaseDate: Date | null; firstSeenAt: Date }, ring: Ring) =>
  new Date((patch.releaseDate ?? patch.firstSeenAt).getTime() + (ring.deferralDays + ring.deadlineDays) * 86_400_000);
