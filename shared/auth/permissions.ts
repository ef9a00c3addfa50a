/**
 * Roles and the permissions they hold by default (DESIGN.md "Authentication").
 * A JWT may carry `permissions`, which then replace the role's defaults.
 */
export const permissions = [
  'partners:manage',
  'orgs:read',
  'orgs:write',
  'sites:write',
  'devices:read',
  'devices:write',
  'enrollment:manage',
  'api-keys:manage',
  'logs:read',
  'audit:read',
  'audit:manage',
] as const;
export type Permission = (typeof permissions)[number];

export const roles = ['platform_admin', 'partner_admin', 'partner_technician', 'org_admin', 'org_technician', 'org_viewer'] as const;
export type Role = (typeof roles)[number];

/** Roles an organization-scoped API key may carry. */
export const apiKeyRoles = ['org_admin', 'org_technician', 'org_viewer'] as const satisfies readonly Role[];

const read: Permission[] = ['orgs:read', 'devices:read', 'logs:read', 'audit:read'];
const technician: Permission[] = [...read, 'devices:write', 'sites:write', 'enrollment:manage'];
const admin: Permission[] = [...technician, 'orgs:write', 'api-keys:manage', 'audit:manage'];

export const rolePermissions: Record<Role, readonly Permission[]> = {
  platform_admin: permissions,
  partner_admin: admin,
  partner_technician: technician,
  org_admin: admin,
  org_technician: technician,
  org_viewer: read,
};

/** Permissions only the platform scope may hold, whatever a token claims. */
const platformOnly: readonly Permission[] = ['partners:manage'];

/** What a principal of this scope holds: a token's claimed permissions never reach beyond its scope. */
export function scopedPermissions(scope: 'platform' | 'partner' | 'organization', claimed: readonly Permission[]): ReadonlySet<Permission> {
  return new Set(scope === 'platform' ? claimed : claimed.filter((p) => !platformOnly.includes(p)));
}
