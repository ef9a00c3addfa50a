import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Permission } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Conflict, NotFound, ValidationFailed } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { selectSite } from '../hierarchy/store.ts';
import { compileFilter, type DeviceFilter, filterParams } from './filter.ts';
import { dynamicMembership } from './membership.ts';
import type {
  createDeviceGroup as createSchema,
  memberSorts,
  previewBody,
  updateDeviceGroup as updateSchema,
} from './schemas.ts';
import type { GroupRow } from './store.ts';
import * as store from './store.ts';

/** Reading groups needs what reading devices needs; changing them, what changing devices needs (docs/device-groups.md). */
export const groupsRead: Permission = 'devices:read';
export const groupsWrite: Permission = 'devices:write';

const invalid = (path: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${path}`, message, code: 'custom' }]);

/**
 * The group if the principal may reach its organization (404 otherwise, also for another tenant's group: the
 * reply never says whether it exists), then the permission it needs there (403).
 */
export async function reachableGroup(db: Db, principal: Principal, groupId: string, permission: Permission) {
  const group = await store.selectGroup(db, groupId);
  if (!group || !(await selectOrganization(db, principal, group.orgId))) throw NotFound('Device group');
  requirePermission(principal, permission);
  return group;
}

export async function listGroups(
  db: Db,
  principal: Principal,
  orgId: string,
  query: Page & { search?: string; type?: string },
) {
  await reachableOrganization(db, principal, orgId, groupsRead);
  return store.selectGroups(db, orgId, query, query);
}

export const getGroup = (db: Db, principal: Principal, groupId: string) =>
  reachableGroup(db, principal, groupId, groupsRead);

/**
 * Inside the organization's group lock: the name is free (409 CONFLICT), the site is a live site of the
 * organization and the parent one of its groups that does not descend from this group (400 naming the field).
 */
async function checkPlacement(
  tx: Db,
  orgId: string,
  groupId: string | null,
  placement: { name?: string; siteId?: string | null; parentId?: string | null },
) {
  if (placement.name && (await store.selectGroupNamed(tx, orgId, placement.name, groupId)))
    throw Conflict(`A device group named ${JSON.stringify(placement.name)} already exists in this organization`);
  if (placement.siteId && !(await selectSite(tx, orgId, placement.siteId)))
    throw invalid('siteId', 'siteId is not a site of this organization');
  if (placement.parentId) {
    const parent = await store.selectGroup(tx, placement.parentId);
    if (parent?.orgId !== orgId) throw invalid('parentId', 'parentId is not a device group of this organization');
    if (groupId && (await store.isAncestorOrSelf(tx, groupId, placement.parentId)))
      throw invalid('parentId', 'A group cannot be nested under itself or one of its descendants');
  }
}

const auditedFields = ['name', 'type', 'siteId', 'parentId', 'filter'] as const;
const groupResource = (group: GroupRow) => ({
  resourceType: 'device_group',
  resourceId: group.id,
  resourceName: group.name,
});
const pick = (group: GroupRow) => Object.fromEntries(auditedFields.map((field) => [field, group[field]]));

/** Audited as device_group.create with the group's fields. */
export async function createGroup(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof createSchema>,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, groupsWrite);
  if (input.type === 'dynamic' && !input.filter) throw invalid('filter', 'A dynamic group needs a filter');
  if (input.type === 'static' && input.filter)
    throw invalid('filter', 'A static group has no filter: its members are added by id');
  return db.transaction(async (tx) => {
    await store.lockGroupsOf(tx, orgId);
    await checkPlacement(tx, orgId, null, input);
    const [group] = await store.insertGroupRows(tx, orgId, [
      {
        name: input.name,
        type: input.type,
        siteId: input.siteId ?? null,
        parentId: input.parentId ?? null,
        filter: input.filter ?? null,
        sourceSystem: null,
        externalId: null,
      },
    ]);
    await auditChange(tx, audit, {
      orgId,
      action: 'device_group.create',
      ...groupResource(group!),
      details: { after: pick(group!) },
    });
    return group!;
  });
}

/** Audited as device_group.update with the changed fields before and after. */
export async function updateGroup(
  db: Db,
  principal: Principal,
  groupId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const before = await reachableGroup(db, principal, groupId, groupsWrite);
  if (change.filter && before.type === 'static')
    throw invalid('filter', 'A static group has no filter: its members are added by id');
  return db.transaction(async (tx) => {
    await store.lockGroupsOf(tx, before.orgId);
    await checkPlacement(tx, before.orgId, groupId, change);
    const updated = await store.updateGroupRow(tx, groupId, change);
    if (!updated) throw NotFound('Device group');
    await auditChange(tx, audit, {
      orgId: updated.orgId,
      action: 'device_group.update',
      ...groupResource(updated),
      details: changedFields(before, updated, auditedFields),
    });
    return updated;
  });
}

/**
 * Deleted for good (its static memberships with it; its child groups move to the top level); the audit trail
 * keeps it as device_group.delete with the group's fields.
 */
export async function deleteGroup(db: Db, principal: Principal, groupId: string, audit: AuditContext) {
  const group = await reachableGroup(db, principal, groupId, groupsWrite);
  await db.transaction(async (tx) => {
    await store.lockGroupsOf(tx, group.orgId);
    if (!(await store.deleteGroupRow(tx, groupId))) throw NotFound('Device group');
    await auditChange(tx, audit, {
      orgId: group.orgId,
      action: 'device_group.delete',
      ...groupResource(group),
      details: { before: pick(group) },
    });
  });
}

/** The compiled condition of a checked filter with its parameters. */
export function filterCondition(filter: DeviceFilter) {
  const { params, bind } = filterParams();
  return { sql: compileFilter(filter, bind), params };
}

type MembersQuery = Page & { sort: (typeof memberSorts)[number] };

export async function listMembers(db: Db, principal: Principal, groupId: string, query: MembersQuery) {
  const group = await reachableGroup(db, principal, groupId, groupsRead);
  return group.type === 'static'
    ? store.selectStaticMembers(db, groupId, query.sort, query)
    : store.selectMatchingDevices(db, group, filterCondition(group.filter!), query.sort, query);
}

/**
 * The ids of a group's member devices now, for work that targets the group (a script run): at most `limit`,
 * else a 400 naming `path`, so a run never reaches part of a group silently.
 */
export async function memberDeviceIds(db: Db, principal: Principal, groupId: string, limit: number, path: string) {
  const members = await listMembers(db, principal, groupId, { page: 1, limit, sort: 'newest' });
  if (members.pagination.total > limit)
    throw invalid(path, `The group holds ${members.pagination.total} devices; a run takes at most ${limit}`);
  return members.data.map((device) => device.id);
}

/** What a filter matches now, without saving it: a first page and the count. */
export async function previewFilter(
  db: Db,
  principal: Principal,
  orgId: string,
  body: z.output<typeof previewBody>,
  query: MembersQuery,
) {
  await reachableOrganization(db, principal, orgId, groupsRead);
  if (body.siteId && !(await selectSite(db, orgId, body.siteId)))
    throw invalid('siteId', 'siteId is not a site of this organization');
  return store.selectMatchingDevices(
    db,
    { orgId, siteId: body.siteId ?? null },
    filterCondition(body.filter),
    query.sort,
    query,
  );
}

const notDynamic = () =>
  invalid('deviceIds', "A dynamic group's members follow its filter; they cannot be added or removed by id");

/** A static group the principal may change: a dynamic group's members follow its filter. */
async function staticGroupToChange(db: Db, principal: Principal, groupId: string) {
  const group = await reachableGroup(db, principal, groupId, groupsWrite);
  if (group.type === 'dynamic') throw notDynamic();
  return group;
}

/** One audit row naming the devices a member change touched; none when it touched none. */
async function auditMemberChange(
  tx: Tx,
  audit: AuditContext,
  group: GroupRow,
  action: 'device_group.member.add' | 'device_group.member.remove',
  changed: { deviceId: string }[],
) {
  if (changed.length === 0) return;
  await auditChange(tx, audit, {
    orgId: group.orgId,
    action,
    ...groupResource(group),
    details: { deviceIds: changed.map((row) => row.deviceId) },
  });
}

/**
 * Adds devices to a static group, each id on its own: added, skipped (already a member, or named twice), or
 * refused (no live device of the group's organization, which is all another tenant's device ever reads as, or
 * outside the group's site). Audited as device_group.member.add with the ids added.
 */
export async function addMembers(
  db: Db,
  principal: Principal,
  groupId: string,
  deviceIds: string[],
  audit: AuditContext,
) {
  const group = await staticGroupToChange(db, principal, groupId);
  const rows = await db.transaction(async (tx) => {
    const rows = await store.insertMembers(tx, group, deviceIds);
    await auditMemberChange(
      tx,
      audit,
      group,
      'device_group.member.add',
      rows.filter((row) => row.added),
    );
    return rows;
  });
  const byId = new Map(rows.map((row) => [row.deviceId, row]));
  const reply = {
    added: 0,
    skipped: 0,
    refused: [] as { deviceId: string; code: 'NOT_FOUND' | 'OUTSIDE_SITE'; message: string }[],
  };
  const seen = new Set<string>();
  for (const id of deviceIds.map((value) => value.toLowerCase())) {
    const row = byId.get(id)!;
    if (!row.found) reply.refused.push({ deviceId: id, code: 'NOT_FOUND', message: 'Device not found' });
    else if (!row.inSite)
      reply.refused.push({ deviceId: id, code: 'OUTSIDE_SITE', message: "The device is not in the group's site" });
    else if (row.added && !seen.has(id)) reply.added += 1;
    else reply.skipped += 1;
    seen.add(id);
  }
  return reply;
}

/** Removes devices from a static group, each id on its own; audited as device_group.member.remove with the ids removed. */
export async function removeMembers(
  db: Db,
  principal: Principal,
  groupId: string,
  deviceIds: string[],
  audit: AuditContext,
) {
  const group = await staticGroupToChange(db, principal, groupId);
  const rows = await db.transaction(async (tx) => {
    const rows = await store.deleteMembers(tx, group, deviceIds);
    await auditMemberChange(
      tx,
      audit,
      group,
      'device_group.member.remove',
      rows.filter((row) => row.removed),
    );
    return rows;
  });
  const byId = new Map(rows.map((row) => [row.deviceId, row]));
  const reply = { removed: 0, skipped: 0, refused: [] as { deviceId: string; code: 'NOT_FOUND'; message: string }[] };
  const seen = new Set<string>();
  for (const id of deviceIds.map((value) => value.toLowerCase())) {
    const row = byId.get(id)!;
    if (row.removed && !seen.has(id)) reply.removed += 1;
    else if (!row.found) reply.refused.push({ deviceId: id, code: 'NOT_FOUND', message: 'Device not found' });
    else reply.skipped += 1;
    seen.add(id);
  }
  return reply;
}

/**
 * The system puts one device in a static group or takes it out (an automation's action): audited as
 * device_group.member.add / .remove by the audit context's actor. Answers whether it changed anything; a group that
 * is gone, dynamic, or of another organization than the device changes nothing.
 */
export async function changeMemberBySystem(
  db: Db,
  groupId: string,
  device: { id: string; orgId: string },
  change: 'add' | 'remove',
  audit: AuditContext,
): Promise<boolean> {
  const group = await store.selectGroup(db, groupId);
  if (group?.type !== 'static' || group.orgId !== device.orgId) return false;
  return db.transaction(async (tx) => {
    if (change === 'add') {
      const rows = (await store.insertMembers(tx, group, [device.id])).filter((row) => row.added);
      await auditMemberChange(tx, audit, group, 'device_group.member.add', rows);
      return rows.length > 0;
    }
    const rows = (await store.deleteMembers(tx, group, [device.id])).filter((row) => row.removed);
    await auditMemberChange(tx, audit, group, 'device_group.member.remove', rows);
    return rows.length > 0;
  });
}

/**
 * The groups a device belongs to, in one statement: every dynamic filter of its organization is compiled into one
 * CASE on the group id and evaluated against the device's row, beside the static member rows. The
 * filters are read beside the reach check and used only once it passed.
 */
export async function listGroupsOfDevice(db: Db, principal: Principal, deviceId: string, page: Page) {
  const [device, filters] = await Promise.all([
    getDevice(db, principal, deviceId),
    store.selectDynamicFiltersOf(db, deviceId),
  ]);
  return store.selectGroupsOfDevice(db, device, dynamicMembership(filters), page);
}
