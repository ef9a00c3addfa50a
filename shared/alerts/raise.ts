import { type AuditContext, flushAudit, writeRouteAudit } from '../audit/writer.ts';
import type { Db } from '../db/db.ts';
import { queueAlertEvent } from './psa-delivery.ts';
import type { Severity } from './schemas.ts';
import * as store from './store.ts';

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

/**
 * Raises the alert of a script failure. While an alert of the same script on the same device is
 * unresolved, the repeat only counts an occurrence on it. A new alert writes `alert.create` (actor: the system) and
 * goes where its organization's binding says: a ticket of the platform's own, or an event for the PSA integration
 * when it takes this severity. Nothing here fails the run item's answer.
 */
export async function raiseScriptAlert(db: Db, failure: ScriptFailure, severity: Severity): Promise<void> {
  const { alert, created } = await store.upsertAlert(db, {
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
  if (!created) return;
  const audit: AuditContext = { db, caller: null, pending: [] };
  writeRouteAudit(audit, {
    orgId: alert.orgId,
    action: 'alert.create',
    resourceType: 'alert',
    resourceId: alert.id,
    resourceName: alert.title,
    details: { severity, deviceId: failure.deviceId, source: alert.source },
  });
  await bindNewAlert(db, audit, alert, failure.partnerId);
  await flushAudit(audit);
}

async function bindNewAlert(db: Db, audit: AuditContext, alert: store.AlertRow, partnerId: string): Promise<void> {
  const binding = await store.selectEffectiveBinding(db, alert.orgId);
  if (binding.target === 'psa' && binding.integrationId) {
    const integration = await store.selectDeliveryTarget(db, binding.integrationId);
    if (!integration?.severities.includes(alert.severity)) return;
    await store.bindAlert(db, alert.id, { ticketId: null, integrationId: integration.id });
    await queueAlertEvent(db, alert, 'alert.created', integration.id);
    return;
  }
  const ticket = await store.insertTicket(db, { partnerId, orgId: alert.orgId, title: alert.title });
  await store.bindAlert(db, alert.id, { ticketId: ticket.id, integrationId: null });
  writeRouteAudit(audit, {
    orgId: alert.orgId,
    action: 'ticket.create',
    resourceType: 'ticket',
    resourceId: ticket.id,
    resourceName: `#${ticket.number}`,
    details: { alertId: alert.id, title: alert.title },
  });
}
