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

/**
 * SQL condition that keeps the live rows owned by a partner (`org_id` NULL) or one of its organizations that the
 * principal reaches: every one for the platform, the partner's own and its organizations' for a partner user, and for
 * an organization's caller its organization's plus the partner's. A row of a deleted organization leaves with it.
 * `alias` names the row, which has `partner_id`, `org_id` and `deleted_at`. Uses the parameters of `tenantParams`.
 */
export function ownedRowTenantSql(alias: string): string {
  return `${alias}.deleted_at IS NULL
  AND (:tenantScope::text = 'platform'
       OR (:tenantScope::text = 'partner' AND ${alias}.partner_id = :tenantPartnerId::uuid)
       OR (:tenantScope::text = 'organization' AND ${alias}.partner_id = :tenantPartnerId::uuid
           AND (${alias}.org_id IS NULL OR ${alias}.org_id = :tenantOrgId::uuid)))
  AND (${alias}.org_id IS NULL
       OR EXISTS (SELECT 1 FROM organizations o WHERE o.id = ${alias}.org_id AND o.deleted_at IS NULL))`;
}

export function tenantParams(principal: Principal) {
  return { tenantScope: principal.scope, tenantPartnerId: principal.partnerId, tenantOrgId: principal.orgId };
}

/** Another tenant's resource is reported as absent: 404, never 403 (a tenant never learns it exists). */
export function assertReachable<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw NotFound(what);
  return value;
}
