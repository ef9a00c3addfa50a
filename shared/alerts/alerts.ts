import { type AuditContext, writeRouteAudit } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { InvalidState } from '../errors.ts';
import { queueAlertEvent } from './psa-delivery.ts';
import type { ListAlertsQuery } from './schemas.ts';
import * as store from './store.ts';

export function listAlerts(db: Db, principal: Principal, query: ListAlertsQuery) {
  requirePermission(principal, 'alerts:read');
  return store.selectAlerts(db, principal, query, query);
}

export async function getAlert(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'alerts:read');
  const { partnerId: _, ...alert } = assertReachable(await store.selectAlert(db, principal, id), 'Alert');
  return alert;
}

export async function listDeliveries(db: Db, principal: Principal, alertId: string, page: Page) {
  await getAlert(db, principal, alertId);
  return store.selectDeliveries(db, alertId, page);
}

/** open → acknowledged, written as `alert.acknowledge`; a PSA-bound alert tells its PSA. */
export function acknowledgeAlert(db: Db, principal: Principal, id: string, audit: AuditContext) {
  return changeStatus(db, principal, id, 'acknowledged', audit);
}

/** open or acknowledged → resolved (`alert.resolve`); its ticket is closed, or its PSA told. */
export function resolveAlert(db: Db, principal: Principal, id: string, audit: AuditContext) {
  return changeStatus(db, principal, id, 'resolved', audit);
}

async function changeStatus(
  db: Db,
  principal: Principal,
  id: string,
  to: 'acknowledged' | 'resolved',
  audit: AuditContext,
) {
  const before = await getAlert(db, principal, id);
  requirePermission(principal, 'alerts:manage');
  const actor = { actorType: principal.actorType, id: principal.id, email: principal.email, name: principal.name };
  const changed = await store.changeAlertStatus(db, id, to, actor);
  if (!changed) throw InvalidState(`The alert is ${before.status}: it cannot be ${to}`);
  const { partnerId: _, ...alert } = changed;
  writeRouteAudit(audit, {
    orgId: alert.orgId,
    action: to === 'acknowledged' ? 'alert.acknowledge' : 'alert.resolve',
    resourceType: 'alert',
    resourceId: alert.id,
    resourceName: alert.title,
    details: { before: { status: before.status }, after: { status: alert.status }, severity: alert.severity },
  });
  if (alert.binding.integrationId)
    await queueAlertEvent(
      db,
      changed,
      to === 'acknowledged' ? 'alert.acknowledged' : 'alert.resolved',
      alert.binding.integrationId,
    );
  if (to === 'resolved' && alert.binding.ticketId) {
    const closed = await store.closeTicket(db, alert.binding.ticketId);
    if (closed)
      writeRouteAudit(audit, {
        orgId: alert.orgId,
        action: 'ticket.close',
        resourceType: 'ticket',
        resourceId: alert.binding.ticketId,
        resourceName: `#${closed.number}`,
        details: { alertId: alert.id, before: { status: 'open' }, after: { status: 'closed' } },
      });
  }
  return alert;
}
