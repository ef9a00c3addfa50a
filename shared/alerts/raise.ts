import { randomUUID } from 'node:crypto';
import { type AuditContext, auditChangeWith, flushAudit, type RouteEvent } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { notifyAlertChange } from '../notifications/notify.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { queueAlertEvent } from './psa-delivery.ts';
import type { Severity } from './schemas.ts';
import * as store from './store.ts';
import { ticketRequested } from './ticket-numbers.ts';

/** What raised an alert: a finished script run item whose exit code maps to a severity. */
export interface ScriptFailure {
  runItemId: string;
  runId: string;
  orgId: string;
  partnerId: string;
  deviceId: string;
  hostname: string;
  scriptId: string;
  scriptName: string;
  scriptVersion: number;
  exitCode: number;
}

/** An alert to raise: what raised it (its source), on which device, how bad. */
export interface AlertToRaise {
  orgId: string;
  partnerId: string;
  deviceId: string;
  sourceType: 'script' | 'automation';
  sourceId: string;
  sourceKey: string;
  severity: Severity;
  title: string;
  details: Record<string, unknown>;
}

/**
 * Raises an alert. While an alert of the same source key on the same device is unresolved, the repeat only counts an
 * occurrence on it. A new alert writes `alert.create` (actor: the system) and goes where its organization's binding
 * says: a ticket of the platform's own, or an event for the PSA integration when it takes this severity. A new alert
 * and a new occurrence alike are told to automations (alert.raised). Answers the alert's id.
 */
export async function raiseAlert(db: Db, raise: AlertToRaise): Promise<string> {
  // Raised by the system; sealed after the commit, outside any keyed request.
  const audit: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
  let raised: { alert: store.AlertRow; created: boolean; integrationId: string | undefined };
  try {
    raised = await db.transaction(async (tx) => {
      const { alert, created } = await store.upsertAlert(tx, raise);
      if (!created) return { alert, created, integrationId: undefined };
      await notifyAlertChange(tx, audit, alert, 'alert.created');
      const integrationId = await bindNewAlert(tx, audit, alert, raise.partnerId, {
        orgId: alert.orgId,
        action: 'alert.create',
        resourceType: 'alert',
        resourceId: alert.id,
        resourceName: alert.title,
        details: { severity: raise.severity, deviceId: raise.deviceId, source: alert.source },
      });
      return { alert, created, integrationId };
    });
  } finally {
    // Also when the commit failed: one that landed anyway arms the sweep.
    await flushAudit(audit);
  }
  // The PSA hears of it once the alert is committed.
  if (raised.integrationId) await queueAlertEvent(db, raised.alert, 'alert.created', raised.integrationId);
  await tellAlertRaised(raised.alert);
  return raised.alert.id;
}

/** alert.raised for automations: one event per occurrence of the alert. */
export function tellAlertRaised(alert: store.AlertRow): Promise<void> {
  if (!alert.deviceId) return Promise.resolve();
  return tellDeviceEvent({
    event: 'alert.raised',
    eventId: `${alert.id}:${alert.occurrences}`,
    deviceId: alert.deviceId,
    data: { severity: alert.severity, source: alert.source.type as string },
  });
}

/** Raises the alert of a script failure (its exit code maps to a severity); nothing here fails the item's answer. */
export async function raiseScriptAlert(db: Db, failure: ScriptFailure, severity: Severity): Promise<void> {
  await raiseAlert(db, {
    orgId: failure.orgId,
    partnerId: failure.partnerId,
    deviceId: failure.deviceId,
    sourceType: 'script',
    sourceId: failure.runItemId,
    sourceKey: `script:${failure.scriptId}`,
    severity,
    title: `${failure.scriptName} exited with code ${failure.exitCode} on ${failure.hostname}`,
    details: {
      scriptId: failure.scriptId,
      scriptName: failure.scriptName,
      scriptVersion: failure.scriptVersion,
      runId: failure.runId,
      runItemId: failure.runItemId,
      hostname: failure.hostname,
      exitCode: failure.exitCode,
    },
  });
}

/**
 * Binds a new alert as its organization's binding says (a PSA integration to tell, or a ticket of its own) and audits
 * its `alert.create` in one statement. A ticket is requested there and numbered once the transaction has committed,
 * with its `ticket.create` sealed after the `alert.create` (ticket-numbers.ts): the partner's counter is never held by
 * the raising transaction. The caller awaits the audit context's pending writes (flushAudit) before it answers, so the
 * ticket has its number by then. Answers the PSA integration to tell, if any.
 */
export async function bindNewAlert(
  tx: Tx,
  audit: AuditContext,
  alert: store.AlertRow,
  partnerId: string,
  createEvent: RouteEvent,
): Promise<string | undefined> {
  const ticketId = randomUUID();
  const events: RouteEvent[] = [
    createEvent,
    {
      orgId: alert.orgId,
      action: 'ticket.create',
      resourceType: 'ticket',
      resourceId: ticketId,
      // Its number, taken by the statement.
      resourceName: '#',
      details: { alertId: alert.id, title: alert.title },
    },
  ];
  const bound = await auditChangeWith(tx, audit, events, async (entries) => {
    const row = await store.bindNewAlertRow(
      tx,
      { id: alert.id, partnerId, orgId: alert.orgId, severity: alert.severity, title: alert.title, ticketId },
      entries,
    );
    return { entries: row.entries, ids: row.ids, failure: row.failure, answer: row };
  });
  if (bound.target === 'tickets') await ticketRequested(tx, audit, partnerId);
  return bound.target === 'psa' ? (bound.integrationId ?? undefined) : undefined;
}
