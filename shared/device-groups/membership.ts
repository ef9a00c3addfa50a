/**
 * Dynamic group membership of one device: each group's filter compiled into one CASE on the group id and evaluated
 * against the device's row, so any number of groups costs one statement.
 */
import type { Db } from '../db/db.ts';
import { compileFilter, type DeviceFilter, filterParams } from './filter.ts';
import { selectDynamicGroupsHolding } from './store.ts';

/** One SQL condition on the group `g` and the device row `d`: whether `d` matches the filter of its group. */
export function dynamicMembership(filters: { id: string; filter: DeviceFilter }[]) {
  const { params, bind } = filterParams();
  const cases = filters.map((group) => `WHEN ${bind(group.id, 'uuid')} THEN ${compileFilter(group.filter, bind)}`);
  return { sql: cases.length > 0 ? `CASE g.id ${cases.join(' ')} ELSE false END` : 'false', params };
}

/**
 * Which of these dynamic groups hold the device now, in one statement: each filter evaluated against the device's
 * row, within the group's site if it has one. For the rules that target groups (maintenance windows), which read
 * the groups they name and not a caller's.
 */
export async function dynamicGroupsHolding(
  db: Db,
  deviceId: string,
  groups: { id: string; filter: DeviceFilter }[],
): Promise<string[]> {
  if (groups.length === 0) return [];
  return selectDynamicGroupsHolding(db, deviceId, dynamicMembership(groups));
}
