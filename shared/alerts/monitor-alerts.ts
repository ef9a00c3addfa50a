import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Db, Tx } from '../db/db.ts';
import { notifyAlertChange } from '../notifications/notify.ts';
import { closeTicketOf } from './alerts.ts';
import { queueAlertEvent } from './psa-delivery.ts';
import { bindNewAlert, tellAlertRaised } from './raise.ts';
import type { Severity } from './schemas.ts';
import * as store from './store.ts';

/** A monitoring item of a policy that fired on a device, with what decided it. */
export interface MonitorFiring {
  orgId: string;
  partnerId: string;
  deviceId: string;
  hostname: string;
  policyId: string;
  policyName: string;
  policyVersion: number;
  itemKey: string;
  item: Record<string, unknown>;
  severity: Severity;
  title: string;
  value: number | null;
  /** The samples or check results that decided it (the window's, newest last). */
  evidence: unknown[];
}

/** What to tell a PSA once the transaction that raised or resolved alerts has committed. */
export type AfterCommit = { alert: store.AlertRow; event: 'alert.created' | 'alert.resolved'; integrationId: string };

/**
 * Raises the alert of a firing monitor in the transaction of the evaluation that fired it: deduplicated while an
 * alert of the same item on the same device is unresolved (the repeat counts an occurrence), written as
 * `alert.create` naming the policy, its version, the item and the evidence, and bound as the organization says.
 */
export async function raiseMonitorAlert(
  tx: Tx,
  audit: AuditContext,
  firing: MonitorFiring,
  after: AfterCommit[],
): Promise<store.AlertRow> {
  const { alert, created } = await store.upsertAlert(tx, {
    orgId: firing.orgId,
    partnerId: firing.partnerId,
    deviceId: firing.deviceId,
    sourceType: 'monitor',
    sourceId: firing.policyId,
    sourceKey: `monitor:${firing.itemKey}`,
    severity: firing.severity,
    title: firing.title,
    details: {
      policyId: firing.policyId,
      policyName: firing.policyName,
      policyVersion: firing.policyVersion,
      itemKey: firing.itemKey,
      item: firing.item,
      hostname: firing.hostname,
      value: firing.value,
      evidence: firing.evidence,
    },
  });
  // Automations hear of a new alert and of each new occurrence once the evaluation has committed.
  tx.afterCommit(() => audit.pending.push(tellAlertRaised(alert)));
  if (!created) return alert;
  // The item's own channels and escalation policy, in place of the defaults when it names them.
  await notifyAlertChange(tx, audit, alert, 'alert.created', {
    channels: firing.item.channels as string[] | undefined,
    escalationPolicyId: firing.item.escalationPolicyId as string | undefined,
    renotifyMinutes: firing.item.renotifyMinutes as number | undefined,
  });
  const integrationId = await bindNewAlert(tx, audit, alert, firing.partnerId, {
    orgId: alert.orgId,
    action: 'alert.create',
    resourceType: 'alert',
    resourceId: alert.id,
    resourceName: alert.title,
    details: {
      severity: alert.severity,
      deviceId: firing.deviceId,
      source: alert.source,
      item: firing.item,
      value: firing.value,
      evidence: firing.evidence,
    },
  });
  if (integrationId) after.push({ alert, event: 'alert.created', integrationId });
  return alert;
}

/** Resolves a monitor's alert whose condition cleared (actor: the system); its ticket closes, its PSA is told. */
export async function resolveMonitorAlert(
  tx: Tx,
  audit: AuditContext,
  alertId: string,
  reason: Record<string, unknown>,
  after: AfterCommit[],
): Promise<void> {
  const row = await store.resolveAlertBySystem(tx, alertId);
  if (!row) return;
  await auditChange(tx, audit, {
    orgId: row.orgId,
    action: 'alert.resolve',
    resourceType: 'alert',
    resourceId: row.id,
    resourceName: row.title,
    details: {
      before: { status: row.previousStatus },
      after: { status: 'resolved' },
      severity: row.severity,
      ...reason,
    },
  });
  await notifyAlertChange(tx, audit, row, 'alert.resolved');
  await closeTicketOf(tx, audit, row);
  if (row.binding.integrationId)
    after.push({ alert: row, event: 'alert.resolved', integrationId: row.binding.integrationId });
}

/** Tells the PSAs, once committed. */
export async function tellPsas(db: Db, after: AfterCommit[]): Promise<void> {
  for (const { alert, event, integrationId } of after) await queueAlertEvent(db, alert, event, integrationId);
}
