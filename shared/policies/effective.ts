import type { Db } from '../db/db.ts';
import { compileFilter, type DeviceFilter, filterParams } from '../device-groups/filter.ts';
import { dynamicMembership } from '../device-groups/membership.ts';
import { type Effective, resolvePolicies } from './resolve.ts';
import type { PolicyKind } from './schemas.ts';
import * as store from './store.ts';

export type EffectiveDevice = store.DeviceRowFacts;

type GroupRef = {
  targetId: string;
  groupType: 'static' | 'dynamic' | null;
  groupFilter: DeviceFilter | null;
  groupSiteId: string | null;
  staticMember: boolean;
};

/**
 * The groups among `refs` the device is a member of now: a static group by its member row, a dynamic one by its
 * filter evaluated against the device's row (one statement for all of them); a group of another site holds none of
 * the site's devices.
 */
async function memberGroups(db: Db, device: { id: string; siteId: string }, refs: GroupRef[]) {
  const member = new Set<string>();
  const dynamic = new Map<string, DeviceFilter>();
  for (const ref of refs) {
    if (!ref.groupType || (ref.groupSiteId && ref.groupSiteId !== device.siteId)) continue;
    if (ref.groupType === 'static' && ref.staticMember) member.add(ref.targetId);
    if (ref.groupType === 'dynamic' && ref.groupFilter) dynamic.set(ref.targetId, ref.groupFilter);
  }
  if (dynamic.size > 0) {
    const { params, bind } = filterParams();
    const groups = [...dynamic].map(([id, filter]) => ({ id, sql: compileFilter(filter, bind) }));
    for (const id of await store.matchingDynamicGroups(db, device.id, groups, params as never)) member.add(id);
  }
  return member;
}

/**
 * What applies to a live device for one kind of policy: the one resolver every consumer calls. Undefined when no
 * live device has this id. One statement, two when a dynamic group is named by an assignment or exemption.
 */
export async function effectivePoliciesOf(
  db: Db,
  deviceId: string,
  kind: PolicyKind,
  /** The device's candidates when they were read already (with an agent's token): no statement for them. */
  read?: Awaited<ReturnType<typeof store.selectCandidates>>,
): Promise<{ device: EffectiveDevice; effective: Effective } | undefined> {
  const found = read?.device.id === deviceId ? read : await store.selectCandidates(db, deviceId, kind);
  if (!found) return undefined;
  const { device, candidates, exemptions } = found;
  const groupRefs: GroupRef[] = [
    ...candidates.filter((c) => c.level === 'group'),
    ...exemptions.filter((e) => e.level === 'group'),
  ];
  const groupIds = await memberGroups(db, device, groupRefs);
  const effective = resolvePolicies(kind, { ...device, groupIds }, candidates, exemptions);
  return { device, effective };
}

/**
 * effectivePoliciesOf for many devices at once (a partner automation's occurrence over its fleet): one statement for
 * every device's candidates and exemptions, a second only when they name dynamic groups, whose filters are evaluated
 * against the devices' rows together. Devices that are not live are left out.
 */
export async function effectivePoliciesOfDevices(
  db: Db,
  deviceIds: readonly string[],
  kind: PolicyKind,
): Promise<Map<string, { device: EffectiveDevice; effective: Effective }>> {
  const found = await store.selectCandidatesOfDevices(db, deviceIds, kind);
  // Static members and dynamic groups to evaluate, per device, as memberGroups decides them for one.
  const member = new Map<string, Set<string>>();
  const pairs: { deviceId: string; groupId: string }[] = [];
  const filters = new Map<string, DeviceFilter>();
  for (const { device, candidates, exemptions } of found.values()) {
    const groups = new Set<string>();
    member.set(device.id, groups);
    for (const ref of [...candidates, ...exemptions] as GroupRef[]) {
      if (!ref.groupType || (ref.groupSiteId && ref.groupSiteId !== device.siteId)) continue;
      if (ref.groupType === 'static' && ref.staticMember) groups.add(ref.targetId);
      if (ref.groupType === 'dynamic' && ref.groupFilter && !filters.has(`${device.id}:${ref.targetId}`)) {
        filters.set(`${device.id}:${ref.targetId}`, ref.groupFilter);
        pairs.push({ deviceId: device.id, groupId: ref.targetId });
      }
    }
  }
  if (pairs.length > 0) {
    const byGroup = new Map(pairs.map((pair) => [pair.groupId, filters.get(`${pair.deviceId}:${pair.groupId}`)!]));
    const membership = dynamicMembership([...byGroup].map(([id, filter]) => ({ id, filter })));
    for (const each of await store.matchingDynamicGroupsOfDevices(db, pairs, membership))
      member.get(each.deviceId)?.add(each.groupId);
  }
  const resolved = new Map<string, { device: EffectiveDevice; effective: Effective }>();
  for (const { device, candidates, exemptions } of found.values()) {
    const groupIds = member.get(device.id)!;
    resolved.set(device.id, {
      device,
      effective: resolvePolicies(kind, { ...device, groupIds }, candidates, exemptions),
    });
  }
  return resolved;
}
