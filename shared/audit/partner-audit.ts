import type { Tx } from '../db/db.ts';
import { type AuditContext, auditChange, type RouteEvent } from './writer.ts';

/**
 * A change to something the whole partner shares (a partner script, a PSA integration, the partner-wide alert
 * binding) goes into the trail of every live organization of the partner, since the trail is kept per organization
 * and each of them is served by it: one row per organization, in the change's own transaction (auditChange).
 */
export async function auditPartnerChange(
  tx: Tx,
  context: AuditContext,
  partnerId: string,
  event: Omit<RouteEvent, 'orgId'>,
): Promise<void> {
  const { rows } = await tx.query<{ id: string }>(
    'SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY id',
    { partnerId },
  );
  await auditChange(
    tx,
    context,
    rows.map((org) => ({ ...event, orgId: org.id })),
  );
}

/**
 * A change to something owned by one organization, or shared by its partner (`orgId` null): into that organization's
 * trail, or into every organization's (auditPartnerChange).
 */
export function auditOwnedChange(
  tx: Tx,
  context: AuditContext,
  owner: { partnerId: string; orgId: string | null },
  event: Omit<RouteEvent, 'orgId'>,
): Promise<void> {
  return owner.orgId
    ? auditChange(tx, context, { ...event, orgId: owner.orgId })
    : auditPartnerChange(tx, context, owner.partnerId, event);
}
