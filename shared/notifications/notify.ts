/**
 * Who is told of an alert, and when: the hook the alerts domain calls in the transaction of each change
 * (notifyAlertChange), the job that tells the alert's channels once the change has committed, the escalation steps,
 * and the notice of alerts a maintenance window held back, sent when it ends.
 */
import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { NotFound } from '../errors.ts';
import { selectSuppressingWindow } from '../maintenance/store.ts';
import { enqueue } from '../queue/work-queue.ts';
import type { NoticeBody } from './formats.ts';
import type { NoticeEvent, Severity } from './schemas.ts';
import { tell } from './send.ts';
import * as store from './store.ts';

export type AlertChange = 'alert.created' | 'alert.acknowledged' | 'alert.resolved';

/** Who an alert rule names: its channels and escalation policy, in place of the defaults (a monitor's item). */
export interface ItemRouting {
  channels?: string[];
  escalationPolicyId?: string | null;
  /** While the alert stays open (unacknowledged and unresolved), its channels are told again this often. */
  renotifyMinutes?: number;
}

/**
 * The hook of the alerts domain, called inside the transaction that raised, acknowledged or resolved an alert. A new
 * alert on a device in a maintenance window that holds back alerts or notifications (and whose allowed severity it
 * does not reach) is marked `suppressedBy` there, in the same transaction, and told nobody; otherwise the notification
 * job is queued once the change has committed (its send is one of the request's writes in flight, awaited before the
 * reply leaves). `item` carries an alert rule's own channels and escalation policy.
 */
export async function notifyAlertChange(
  tx: Tx,
  audit: AuditContext,
  alert: { id: string; orgId: string; deviceId: string | null; severity: Severity },
  event: AlertChange,
  item?: ItemRouting,
): Promise<void> {
  if (event === 'alert.created') {
    const window = await selectSuppressingWindow(tx, alert);
    if (window) {
      await store.markSuppressed(tx, alert.id, window.id, item);
      return;
    }
  }
  tx.afterCommit(() => audit.pending.push(enqueue({ kind: 'notifications.alert', alertId: alert.id, event, item })));
}

/**
 * The channels and escalation policy of an alert: the rule's own (`item`) when it names them, else the defaults of
 * its organization for its severity, and for each severity the organization has none of its own, its partner's (read
 * with the alert, with those of their channels that serve its organization).
 */
export async function channelsFor(
  db: Db,
  alert: Pick<store.NoticeAlert, 'orgId' | 'ownDefaults' | 'partnerDefaults' | 'servingDefaultChannels'>,
  item?: ItemRouting,
): Promise<{ channelIds: string[]; escalationPolicyId: string | null }> {
  const own = alert.ownDefaults;
  const partner = alert.partnerDefaults;
  const escalationPolicyId =
    item?.escalationPolicyId !== undefined
      ? item.escalationPolicyId
      : (own?.escalationPolicyId ?? partner?.escalationPolicyId ?? null);
  const channelIds =
    item?.channels && item.channels.length > 0
      ? await store.selectServingChannels(db, alert.orgId, item.channels)
      : alert.servingDefaultChannels;
  return { channelIds, escalationPolicyId };
}

/** The alert as its notifications record it. */
function bodyOf(alert: store.NoticeAlert, step?: number): NoticeBody {
  return {
    alert: {
      id: alert.id,
      orgId: alert.orgId,
      orgName: alert.orgName,
      deviceId: alert.deviceId,
      hostname: alert.hostname,
      source: alert.source,
      severity: alert.severity,
      title: alert.title,
      status: alert.status,
      details: alert.details,
      createdAt: new Date(alert.createdAt).toISOString(),
    },
    ...(step === undefined ? {} : { step }),
  };
}

/**
 * The notification job of an alert change: a new alert goes to its channels and starts its escalation policy; an
 * acknowledgement or resolution goes to the channels that were told of it (PagerDuty follows the incident). An alert
 * a maintenance window holds back waits for the window's end.
 */
export async function notifyAlert(db: Db, job: { alertId: string; event: AlertChange; item?: ItemRouting }) {
  const alert = await store.selectNoticeAlert(db, job.alertId);
  if (!alert) return;
  if (job.event !== 'alert.created') {
    const told = await store.selectToldChannels(db, alert.id);
    await Promise.all(told.map((channelId) => tellAlert(db, alert, channelId, job.event, null)));
    return;
  }
  if (alert.suppressedBy) return;
  await startNotices(db, alert, job.item);
}

/** The first notice of an alert on each of its channels, and the first step of its escalation armed. */
async function startNotices(db: Db, alert: store.NoticeAlert, item: ItemRouting | undefined): Promise<void> {
  const routing = await channelsFor(db, alert, item);
  await Promise.all(routing.channelIds.map((channelId) => tellAlert(db, alert, channelId, 'alert.created', 0)));
  if (item?.renotifyMinutes)
    await enqueue({ kind: 'notifications.renotify', alertId: alert.id, item, round: 1 }, item.renotifyMinutes * 60);
  if (routing.escalationPolicyId) {
    const policy = await store.selectPolicySteps(db, routing.escalationPolicyId);
    const first = policy?.steps[0];
    if (first)
      await enqueue(
        {
          kind: 'notifications.escalate',
          alertId: alert.id,
          policyId: routing.escalationPolicyId,
          step: 0,
          since: Date.now(),
        },
        first.afterMinutes * 60,
      );
  }
}

function tellAlert(db: Db, alert: store.NoticeAlert, channelId: string, event: NoticeEvent, step: number | null) {
  return tell(db, {
    channelId,
    alertId: alert.id,
    orgId: alert.orgId,
    event,
    step,
    dedupeKey: `${alert.id}:${channelId}:${event}:${step ?? '-'}`,
    body: bodyOf(alert, step ?? undefined),
  });
}

/**
 * One escalation step: the alert is read again, and only while it is still open (nobody acknowledged or resolved it)
 * are the step's channels told; then the next step is armed. Nothing is ever cancelled: a later step finds the alert
 * acknowledged and stops.
 */
export async function escalate(
  db: Db,
  job: { alertId: string; policyId: string; step: number; since: number },
): Promise<'sent' | 'stopped'> {
  const alert = await store.selectNoticeAlert(db, job.alertId);
  if (alert?.status !== 'open') return 'stopped';
  const policy = await store.selectPolicySteps(db, job.policyId);
  const step = policy?.steps[job.step];
  if (!step) return 'stopped';
  const channelIds = await store.selectServingChannels(db, alert.orgId, step.channelIds);
  await Promise.all(channelIds.map((channelId) => tellAlert(db, alert, channelId, 'alert.escalated', job.step)));
  const next = policy.steps[job.step + 1];
  if (next) {
    const due = job.since + next.afterMinutes * 60_000;
    await enqueue(
      { ...job, kind: 'notifications.escalate', step: job.step + 1 },
      Math.max(0, Math.ceil((due - Date.now()) / 1000)),
    );
  }
  return 'sent';
}

/**
 * A reminder of an alert still open after its rule's renotify interval: the alert is read again, and only while
 * nobody acknowledged or resolved it are its channels told again (each reminder once per channel), and the next one
 * is armed. Nothing is cancelled: a reminder that finds the alert acknowledged or resolved stops.
 */
export async function renotify(
  db: Db,
  job: { alertId: string; item: ItemRouting; round: number },
): Promise<'sent' | 'stopped'> {
  const alert = await store.selectNoticeAlert(db, job.alertId);
  if (alert?.status !== 'open' || alert.suppressedBy || !job.item.renotifyMinutes) return 'stopped';
  const routing = await channelsFor(db, alert, job.item);
  await Promise.all(
    routing.channelIds.map((channelId) => tellAlert(db, alert, channelId, 'alert.renotified', job.round)),
  );
  await enqueue({ ...job, kind: 'notifications.renotify', round: job.round + 1 }, job.item.renotifyMinutes * 60);
  return 'sent';
}

/**
 * When a maintenance window ends: its held-back alerts that are still firing (open or acknowledged) are told once, as
 * if raised now; those resolved during the window are not told at all.
 */
export async function notifyAfterWindow(db: Db, windowId: string): Promise<number> {
  const rows = await store.selectHeldAlerts(db, windowId);
  for (const row of rows) {
    const alert = await store.selectNoticeAlert(db, row.id);
    if (alert && alert.status !== 'resolved') await startNotices(db, alert, row.routing ?? undefined);
  }
  return rows.length;
}

/** GET /alerts/{id}/notifications: the alert's delivery log, with the digests that carried its held-back ones. */
export async function listAlertNotifications(db: Db, principal: Principal, alertId: string, page: Page) {
  requirePermission(principal, 'alerts:read');
  if (!(await store.alertReachable(db, principal, alertId))) throw NotFound('Alert');
  return store.selectAlertNotifications(db, alertId, page);
}
