import type { Db } from '../db/db.ts';
import { type AuditContext, writeRouteAudit } from './writer.ts';

/**
 * A change to something the whole partner shares (a partner script, a PSA integration, the partner-wide alert
 * binding) goes into the trail of every live organization of the partner, since the trail is kept per organization
 * and each of them is served by it.
 */
export async function writePartnerRouteAudit(
  db: Db,
  context: AuditContext,
  partnerId: string,
  event: Omit<Parameters<typeof writeRouteAudit>[1], 'orgId'>,
): Promise<void> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY id',
    { partnerId },
  );
  for (const org of rows) writeRouteAudit(context, { ...event, orgId: org.id });
}
