import type { Db } from '../db/db.ts';
import { isOrganizationRole } from './user-schemas.ts';
import { selectUserByEmail } from './user-store.ts';

/** The claim that carries the Logbook user id in the tokens of Logbook's own user pool (JWT_CLAIM_USER_ID). */
export const userIdClaim = 'logbookUserId';

/**
 * The claims a token of this e-mail address carries, from Logbook's user record: role, scope, partner, the
 * organization of an organization role, and the user id. Undefined for an address that is no live user: the
 * identity provider then issues no token (a deleted user cannot sign in).
 */
export async function userTokenClaims(db: Db, email: string): Promise<Record<string, string> | undefined> {
  const user = await selectUserByEmail(db, email);
  if (!user) return undefined;
  const organization = isOrganizationRole(user.role);
  return {
    role: user.role,
    scope: organization ? 'organization' : 'partner',
    partnerId: user.partnerId,
    ...(organization && user.orgId ? { orgId: user.orgId } : {}),
    [userIdClaim]: user.id,
  };
}
