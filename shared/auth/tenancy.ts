import { Forbidden, NotFound } from '../errors.ts';
import type { Permission } from './permissions.ts';
import type { Principal } from './principal.ts';

/** Throws 403 unless the principal holds the permission. */
export function requirePermission(principal: Principal, permission: Permission): void {
  if (!principal.permissions.has(permission)) throw Forbidden(`Missing permission ${permission}`);
}

/**
 * SQL condition that keeps the organizations the principal may reach: all for
 * platform scope, the partner's for partner scope, one for organization scope.
 * Uses the parameters of `tenantParams`.
 */
export function orgTenantSql(orgAlias: string): string {
  return `(:tenantScope::text = 'platform'
    OR (:tenantScope::text = 'partner' AND ${orgAlias}.partner_id = :tenantPartnerId::uuid)
    OR (:tenantScope::text = 'organization' AND ${orgAlias}.id = :tenantOrgId::uuid))`;
}

export function tenantParams(principal: Principal) {
  return { tenantScope: principal.scope, tenantPartnerId: principal.partnerId, tenantOrgId: principal.orgId };
}

/** Another tenant's resource is reported as absent: 404, never 403 (a tenant never learns it exists). */
export function assertReachable<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw NotFound(what);
  return value;
}
