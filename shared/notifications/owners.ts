import { auditPartnerChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange, type RouteEvent } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import { type Db, one, type Tx } from '../db/db.ts';
import { Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import type { Owner } from './store.ts';

/**
 * Who owns what a caller creates: an organization it reaches, or its partner (`availability: "partner"`), which only
 * partner (and platform) users write. Channels, escalation policies and maintenance windows share this rule.
 */
export async function writableOwner(
  db: Db,
  principal: Principal,
  target: { availability?: 'organization' | 'partner'; orgId?: string; partnerId?: string },
  what: string,
): Promise<Owner> {
  requirePermission(principal, 'integrations:manage');
  if (target.availability === 'partner') {
    if (principal.scope === 'organization') throw Forbidden(`Only partner users create partner ${what}`);
    if (principal.scope === 'partner') return { partnerId: principal.partnerId!, orgId: null };
    if (!target.partnerId)
      throw ValidationFailed('partnerId is required', [
        { path: 'body.partnerId', message: `Platform callers name the partner of a partner ${what}`, code: 'custom' },
      ]);
    await assertPartnerReached(db, principal, target.partnerId);
    return { partnerId: target.partnerId, orgId: null };
  }
  const org = await selectOrganization(db, principal, target.orgId!);
  if (!org) throw NotFound('Organization');
  return { partnerId: org.partnerId, orgId: org.id };
}

/** A partner-wide row is changed only by partner users (and the platform); an organization's by its users too. */
export function assertEditable(principal: Principal, row: { orgId: string | null }, what: string): void {
  requirePermission(principal, 'integrations:manage');
  if (row.orgId === null && principal.scope === 'organization')
    throw Forbidden(`A partner ${what} is changed only by partner users`);
}

/** The partner exists and the principal is its user (or the platform's); otherwise 404, as for another tenant's. */
export async function assertPartnerReached(db: Db, principal: Principal, partnerId: string): Promise<void> {
  if (principal.scope !== 'platform' && (principal.scope !== 'partner' || principal.partnerId !== partnerId))
    throw NotFound('Partner');
  const row = await one(db, 'SELECT 1 FROM partners WHERE id = :partnerId::uuid', { partnerId });
  if (!row) throw NotFound('Partner');
}

/** The audit rows of a change to an owned row: in its organization's trail, or in every trail of the partner. */
export function auditOwned(tx: Tx, audit: AuditContext, owner: Owner, event: Omit<RouteEvent, 'orgId'>) {
  return owner.orgId
    ? auditChange(tx, audit, { ...event, orgId: owner.orgId })
    : auditPartnerChange(tx, audit, owner.partnerId, event);
}
