/**
 * Roles and the permissions they hold by default.
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
  // How long an organization's agent diagnostic logs and device event logs are kept.
  'logs:manage',
  'audit:read',
  'audit:manage',
  // Reporting audit events of other platform components (POST /api/v1/audit-logs/events).
  'audit:write',
  // Scripts, alerts and their PSA integrations.
  'scripts:read',
  'scripts:write',
  'scripts:run',
  'alerts:read',
  'alerts:manage',
  'integrations:manage',
  // Policies (monitoring, patching, automation), their assignments and exemptions.
  'policies:read',
  'policies:write',
  // Patching: the patch catalogue, compliance and rings (patching:read); approvals, ring pause, promotion and run-now
  // (patching:manage).
  'patching:read',
  'patching:manage',
  // The users API: a partner's (or an organization's) people and their roles.
  'users:manage',
  // Contracts and invoicing: a partner's business, never held by an organization's users.
  'billing:read',
  'billing:manage',
] as const;
export type Permission = (typeof permissions)[number];

/** Roles a user token may carry. */
export const userRoles = [
  'platform_admin',
  'partner_admin',
  'partner_technician',
  'org_admin',
  'org_technician',
  'org_viewer',
] as const;
/** Every role: the user roles and org_service, which only API keys carry. */
export const roles = [...userRoles, 'org_service'] as const;
export type Role = (typeof roles)[number];

/** Roles an organization-scoped API key may carry (org_service: a platform component's key, see rolePermissions). */
export const apiKeyRoles = [
  'org_admin',
  'org_technician',
  'org_viewer',
  'org_service',
] as const satisfies readonly Role[];
export type ApiKeyRole = (typeof apiKeyRoles)[number];

const read: Permission[] = [
  'orgs:read',
  'devices:read',
  'logs:read',
  'audit:read',
  'scripts:read',
  'alerts:read',
  'policies:read',
];
const technician: Permission[] = [
  ...read,
  'devices:write',
  'sites:write',
  'enrollment:manage',
  'scripts:write',
  'scripts:run',
  'alerts:manage',
];
const admin: Permission[] = [
  ...technician,
  'orgs:write',
  'api-keys:manage',
  'audit:manage',
  'logs:manage',
  'integrations:manage',
  'policies:write',
  'users:manage',
  'patching:read',
  'patching:manage',
];

export const rolePermissions: Record<Role, readonly Permission[]> = {
  platform_admin: permissions,
  partner_admin: [...admin, 'billing:read', 'billing:manage'],
  partner_technician: technician,
  org_admin: admin,
  org_technician: technician,
  org_viewer: read,
  // A platform component's key (login service, policy engine ...): it reports its organization's
  // audit events and can read or change nothing else.
  org_service: ['audit:write'],
};

/**
 * Permissions only the platform scope may hold, whatever a token claims. audit:write is among them:
 * a partner's or an organization's user never reports events into the trail it is judged by; an
 * organization's events come from platform callers or from its own org_service API key.
 */
const platformOnly: readonly Permission[] = ['partners:manage', 'audit:write'];

/** What a principal of this scope holds: a token's claimed permissions never reach beyond its scope. */
export function scopedPermissions(
  scope: 'platform' | 'partner' | 'organization',
  claimed: readonly Permission[],
): ReadonlySet<Permission> {
  return new Set(scope === 'platform' ? claimed : claimed.filter((p) => !platformOnly.includes(p)));
}
