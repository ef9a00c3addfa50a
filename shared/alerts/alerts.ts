import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { InvalidState } from '../errors.ts';
import { notifyAlertChange } from '../notifications/notify.ts';
import { queueAlertEvent } from './psa-delivery.ts';
import type { ListAlertsQuery } from './schemas.ts';
import * as store from './store.ts';

/** Closes the ticket of a resolved alert, if it has an open one, audited as ticket.close in the same transaction. */
export async function closeTicketOf(tx: Tx, audit: AuditContext, alert: store.AlertRow) {
  if (!alert.binding.ticketId) return;
  const closed = await store.closeTicket(tx, alert.binding.ticketId);
  if (closed)
    await auditChange(tx, audit, {
      orgId: alert.orgId,
      action: 'ticket.close',
      resourceType: 'ticket',
      resourceId: alert.binding.ticketId,
      resourceName: `#${closed.number}`,
      details: { alertId: alert.id, before: { status: 'open' }, after: { status: 'closed' } },
    });
}

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
  const changed = await db.transaction(async (tx) => {
    const row = await store.changeAlertStatus(tx, id, to, actor);
    if (!row) throw InvalidState(`The alert is ${before.status}: it cannot be ${to}`);
    await auditChange(tx, audit, {
      orgId: row.orgId,
      action: to === 'acknowledged' ? 'alert.acknowledge' : 'alert.resolve',
      resourceType: 'alert',
      resourceId: row.id,
      resourceName: row.title,
      details: { before: { status: before.status }, after: { status: row.status }, severity: row.severity },
    });
    await notifyAlertChange(tx, audit, row, to === 'acknowledged' ? 'alert.acknowledged' : 'alert.resolved');
    if (to === 'resolved') await closeTicketOf(tx, audit, row);
    return row;
  });
  const { partnerId: _, ...alert } = changed;
  // The PSA hears of it once the change is committed.
  if (alert.binding.integrationId)
    await queueAlertEvent(
      db,
      changed,
      to === 'acknowledged' ? 'alert.acknowledged' : 'alert.resolved',
      alert.binding.integrationId,
    );
  return alert;
}
