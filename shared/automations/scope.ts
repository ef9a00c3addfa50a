/**
 * Where an automation applies: an organization's to its organization's devices; a partner's where policies of kind
 * automation assign it (through the one policy resolver, over the devices of an occurrence at once). Conditions are
 * the device filter language of dynamic groups (the same compiler), evaluated when the automation fires.
 */
import type { Db } from '../db/db.ts';
import { filterCondition } from '../device-groups/groups.ts';
import { effectivePoliciesOf, effectivePoliciesOfDevices } from '../policies/effective.ts';
import type { Origin } from '../policies/resolve.ts';
import * as store from './store.ts';

/** The policy item that carries a partner automation to the devices its policy is assigned to. */
export const isItemOf = (automationId: string) => (item: Record<string, unknown>) => item.automationId === automationId;

/** The policy origin that brings a partner automation to a device, or undefined when none does. */
export async function policyOrigin(db: Db, deviceId: string, automationId: string): Promise<Origin | undefined> {
  const resolved = await effectivePoliciesOf(db, deviceId, 'automation');
  return resolved?.effective.items.find((each) => isItemOf(automationId)(each.item))?.origin;
}

/**
 * The devices an automation fires on now: in its scope, meeting its conditions, narrowed to `deviceIds` and to a
 * zone when given.
 */
export async function devicesInScope(
  db: Db,
  automation: store.AutomationRow,
  narrow: { deviceIds?: string[]; zone?: string; conditions?: boolean } = {},
): Promise<store.ScopeDevice[]> {
  const owner = { partnerId: automation.partnerId, orgId: automation.orgId };
  if (!owner.orgId && !(await store.automationAssigned(db, automation.id))) return [];
  const condition =
    automation.conditions && narrow.conditions !== false ? filterCondition(automation.conditions) : undefined;
  const devices = await store.selectOwnerDevices(db, owner, {
    deviceIds: narrow.deviceIds,
    zone: narrow.zone,
    condition,
  });
  if (owner.orgId) return devices;
  // Which of them a policy brings it to: the one resolver, over all of them at once.
  const resolved = await effectivePoliciesOfDevices(
    db,
    devices.map((device) => device.id),
    'automation',
  );
  const brought = isItemOf(automation.id);
  return devices.filter((device) => resolved.get(device.id)?.effective.items.some((each) => brought(each.item)));
}

/** The zones of the devices an automation can reach (its owner's devices): one occurrence per zone. */
export const zonesOf = (db: Db, automation: store.AutomationRow) =>
  store.selectOwnerZones(db, { partnerId: automation.partnerId, orgId: automation.orgId });
