import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { z } from 'zod';
import { DomainError, Unauthenticated } from '../errors.ts';
import {
  type Permission,
  permissions,
  type Role,
  rolePermissions,
  scopedPermissions,
  userRoles,
} from './permissions.ts';
import type { Principal, Scope } from './principal.ts';

export const jwtDefaults = { issuer: 'logbook-local', audience: 'logbook' } as const;

/** The claims of a user token. */
const scopeOfRole = (role: Role): Scope =>
  role === 'platform_admin' ? 'platform' : role.startsWith('partner_') ? 'partner' : 'organization';

export const userClaims = z
  .object({
    sub: z.uuid(),
    email: z.string().max(255).optional(),
    name: z.string().max(255).optional(),
    role: z.enum(userRoles),
    scope: z
      .enum(['platform', 'partner', 'organization'])
      .optional()
      .meta({ description: 'Implied by the role when absent' }),
    partnerId: z.uuid().optional(),
    orgId: z.uuid().optional(),
    // Permissions of other services sharing the identity provider are ignored, not fatal.
    permissions: z
      .array(z.string())
      .transform((list) => list.filter((p): p is Permission => (permissions as readonly string[]).includes(p)))
      .optional(),
  })
  .transform((c) => ({ ...c, scope: c.scope ?? scopeOfRole(c.role) }))
  .refine((c) => c.scope !== 'platform' || c.role === 'platform_admin', 'platform scope needs the platform_admin role')
  .refine(
    (c) => c.scope !== 'partner' || (c.partnerId && c.role.startsWith('partner_')),
    'partner scope needs partnerId and a partner role',
  )
  .refine(
    (c) => c.scope !== 'organization' || (c.orgId && c.role.startsWith('org_')),
    'organization scope needs orgId and an organization role',
  );
export type UserClaims = z.input<typeof userClaims>;

/**
 * Where a token carries Logbook's claims: the names are settings (JWT_CLAIM_ROLE, JWT_CLAIM_PARTNER_ID,
 * JWT_CLAIM_ORG_IDS, JWT_CLAIM_SCOPE, JWT_CLAIM_USER_ID), so that an identity provider's own claims serve (Entra ID's
 * app roles in `roles` and its object id in `oid`, an Auth0 action's namespaced `https://…/partnerId`). Unset:
 * Logbook's own names.
 */
export function claimNames() {
  return {
    userId: process.env.JWT_CLAIM_USER_ID || 'sub',
    role: process.env.JWT_CLAIM_ROLE || 'role',
    partnerId: process.env.JWT_CLAIM_PARTNER_ID || 'partnerId',
    orgIds: process.env.JWT_CLAIM_ORG_IDS || 'orgId',
    scope: process.env.JWT_CLAIM_SCOPE || 'scope',
  };
}

/**
 * A claim's one value: itself, or from a list (app roles, groups) the one entry that `fits` (a Logbook role, an
 * id); a list holding several that fit is ambiguous and reads as none.
 */
function oneOf(value: unknown, fits: (item: string) => boolean): unknown {
  if (!Array.isArray(value)) return value;
  const fitting = [...new Set(value.filter((item): item is string => typeof item === 'string' && fits(item)))];
  return fitting.length === 1 ? fitting[0] : undefined;
}

const isRole = (item: string) => (userRoles as readonly string[]).includes(item);
const isUuid = (item: string) => z.uuid().safeParse(item).success;
const isScope = (item: string) => ['platform', 'partner', 'organization'].includes(item);

/** The token's claims under Logbook's names, read from where the settings say the provider puts them. */
export function logbookClaims(payload: Record<string, unknown>): Record<string, unknown> {
  const names = claimNames();
  return {
    ...payload,
    sub: payload[names.userId],
    role: oneOf(payload[names.role], isRole),
    partnerId: oneOf(payload[names.partnerId], isUuid),
    orgId: oneOf(payload[names.orgIds], isUuid),
    scope: oneOf(payload[names.scope], isScope),
  };
}

interface Verifier {
  key: Uint8Array | JWTVerifyGetKey;
  algorithms: string[];
  issuer: string;
  audience: string;
}

let verifier: Verifier | undefined;

/** Built once per cold start from JWT_JWKS_URL (AWS) or JWT_SECRET (local, HS256). */
function getVerifier(): Verifier {
  if (!verifier) {
    const issuer = process.env.JWT_ISSUER || jwtDefaults.issuer;
    const audience = process.env.JWT_AUDIENCE || jwtDefaults.audience;
    if (process.env.JWT_JWKS_URL) {
      verifier = {
        key: createRemoteJWKSet(new URL(process.env.JWT_JWKS_URL)),
        algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
        issuer,
        audience,
      };
    } else if (process.env.JWT_SECRET) {
      verifier = { key: new TextEncoder().encode(process.env.JWT_SECRET), algorithms: ['HS256'], issuer, audience };
    } else {
      throw new Error('JWT_JWKS_URL or JWT_SECRET must be set');
    }
  }
  return verifier;
}

/** Forgets the cached verifier (configuration changed, as in tests). */
export function resetJwtVerifier(): void {
  verifier = undefined;
}

/**
 * Verifies a user token: signature with the configured algorithms only (so `alg: none`
 * and algorithm confusion fail), issuer, audience, expiry (required), then the claims.
 */
export async function verifyUserToken(token: string): Promise<Principal> {
  const { key, algorithms, issuer, audience } = getVerifier();
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key as Uint8Array, {
      algorithms,
      issuer,
      audience,
      requiredClaims: ['exp', 'sub'],
    }));
  } catch (error) {
    // The identity provider's keys could not be fetched: the token may well be valid.
    if (error instanceof errors.JWKSTimeout || !(error instanceof errors.JOSEError)) {
      throw new DomainError('UNAVAILABLE', 'Token keys are unavailable; retry shortly');
    }
    throw Unauthenticated('Invalid or expired token');
  }
  const claims = userClaims.safeParse(logbookClaims(payload));
  if (!claims.success) throw Unauthenticated('Token claims are invalid');
  const c = claims.data;
  return {
    actorType: 'user',
    id: c.sub,
    email: c.email ?? null,
    name: c.name ?? null,
    role: c.role,
    scope: c.scope,
    partnerId: c.partnerId ?? null,
    orgId: c.scope === 'organization' ? c.orgId! : null,
    permissions: scopedPermissions(c.scope, c.permissions ?? rolePermissions[c.role]),
  };
}
