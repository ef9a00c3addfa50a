/**
 * Who owns what a caller creates — channels, escalation policies, maintenance windows, scripts: an organization it
 * reaches, or its partner (`availability: "partner"`: the partner's library, shared by every organization), which only
 * partner (and platform) users write. Changing follows the same rule: a partner's row is changed by partner users
 * only, an organization's by its users too.
 */
import { type Db, one } from '../db/db.ts';
import { Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import type { Permission } from './permissions.ts';
import type { Principal } from './principal.ts';
import { selectOrganization } from './store.ts';
import { requirePermission } from './tenancy.ts';

/** An owner: an organization, or its partner (orgId null) for what the whole partner shares. */
export interface Owner {
  partnerId: string;
  orgId: string | null;
}

/** What is owned, for the permission that writes it and the messages that refuse: `one` and `many` name it. */
export interface OwnedKind {
  permission: Permission;
  one: string;
  many: string;
}

export async function writableOwner(
  db: Db,
  principal: Principal,
  target: { availability?: 'organization' | 'partner'; orgId?: string; partnerId?: string },
  kind: OwnedKind,
): Promise<Owner> {
  requirePermission(principal, kind.permission);
  if (target.availability === 'partner') {
    if (principal.scope === 'organization') throw Forbidden(`Only partner users create partner ${kind.many}`);
    if (principal.scope === 'partner') return { partnerId: principal.partnerId!, orgId: null };
    if (!target.partnerId)
      throw ValidationFailed('partnerId is required', [
        {
          path: 'body.partnerId',
          message: `Platform callers name the partner of a partner ${kind.one}`,
          code: 'custom',
        },
      ]);
    await assertPartnerReached(db, principal, target.partnerId);
    return { partnerId: target.partnerId, orgId: null };
  }
  const org = await selectOrganization(db, principal, target.orgId!);
  if (!org) throw NotFound('Organization');
  return { partnerId: org.partnerId, orgId: org.id };
}

/** A partner's row is changed only by partner users (and the platform); an organization's by its users too. */
export function assertOwnerEditable(principal: Principal, row: { orgId: string | null }, kind: OwnedKind): void {
  requirePermission(principal, kind.permission);
  if (row.orgId === null && principal.scope === 'organization')
    throw Forbidden(`A partner ${kind.one} is changed only by partner users`);
}

/** The partner exists and the principal is its user (or the platform's); otherwise 404, as for another tenant's. */
export async function assertPartnerReached(db: Db, principal: Principal, partnerId: string): Promise<void> {
  if (principal.scope !== 'platform' && (principal.scope !== 'partner' || principal.partnerId !== partnerId))
    throw NotFound('Partner');
  const row = await one(db, 'SELECT 1 FROM partners WHERE id = :partnerId::uuid', { partnerId });
  if (!row) throw NotFound('Partner');
}
