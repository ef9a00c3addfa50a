import type { Db } from '../db/db.ts';
import type { Permission } from './permissions.ts';
import type { Principal } from './principal.ts';
import { selectOrganization } from './store.ts';
import { assertReachable, requirePermission } from './tenancy.ts';

/**
 * The live organization the principal may reach (404 otherwise, also for another
 * tenant's: a tenant never learns it exists), then the permission it needs there (403).
 */
export async function reachableOrganization(db: Db, principal: Principal, id: string, permission: Permission) {
  const org = assertReachable(await selectOrganization(db, principal, id), 'Organization');
  requirePermission(principal, permission);
  return org;
}
