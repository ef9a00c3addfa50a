/**
 * Sending notifications: each is recorded first (the delivery log), then attempted by a job of the work queue and
 * retried with backoff; a channel's throttle holds back what is over its limit and sends it as one digest when its
 * window reopens.
 */
import { randomUUID } from 'node:crypto';
import { type AuditContext, auditChange, flushAudit } from '../audit/writer.ts';
import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { logger } from '../logger.ts';
import { OutboundRefused } from '../outbound/address.ts';
import { postOutbound } from '../outbound/request.ts';
import { enqueue } from '../queue/work-queue.ts';
import { type NoticeBody, render } from './formats.ts';
import { sendMail } from './mail.ts';
import type { NoticeEvent } from './schemas.ts';
import * as store from './store.ts';

/** Waits before each retry of a failed attempt: 1, 2, 4, 8 and 16 minutes; after the 6th attempt it is `failed`. */
export const retryDelaysSeconds = [60, 120, 240, 480, 960];

/** One attempt waits this long for an answer (NOTIFICATION_TIMEOUT_MS). */
const timeoutMs = () => Number(process.env.NOTIFICATION_TIMEOUT_MS) || 10_000;
/** A digest carries at most this many held-back notifications; more are carried by the next one, armed at once. */
const digestLimit = 500;

/** The system acts: audit rows sealed after the commit, outside any keyed request. */
const systemAudit = (db: Db): AuditContext => ({ db: unkeyedDb(db), caller: null, pending: [] });

export interface Notice {
  channelId: string;
  alertId: string | null;
  orgId: string | null;
  event: NoticeEvent;
  step: number | null;
  /** One notification per key: (alert, channel, event, escalation step). */
  dedupeKey: string | null;
  body: NoticeBody;
}

export type Told = 'queued' | 'throttled' | 'duplicate' | 'gone';

/**
 * Records a notification on its channel and queues its first attempt, or, when the channel's throttle is full,
 * records it throttled (`alert.notification.throttled`) and arms the channel's digest for when the window reopens.
 * The channel's row is locked while it counts, so concurrent notices never pass its limit together.
 */
export async function tell(db: Db, notice: Notice): Promise<Told> {
  const audit = systemAudit(db);
  let armDigestAt: Date | undefined;
  let queued: string | undefined;
  let told: Told;
  try {
    told = await db.transaction(async (tx) => {
      const channel = await store.selectSendingChannel(tx, notice.channelId, true);
      if (!channel || channel.deleted) return 'gone';
      const throttle =
        channel.throttleMax !== null && channel.throttleWindowMinutes !== null && notice.event !== 'channel.test'
          ? { max: channel.throttleMax, windowMinutes: channel.throttleWindowMinutes }
          : null;
      const row = await store.insertCountedNotification(tx, { ...notice, body: { ...notice.body } }, throttle);
      if (!row) return 'duplicate';
      if (row.status === 'pending') {
        queued = row.id;
        return 'queued';
      }
      const reopensAt = new Date(new Date(row.oldest!).getTime() + throttle!.windowMinutes * 60_000);
      if (notice.orgId)
        await auditChange(tx, audit, {
          orgId: notice.orgId,
          action: 'alert.notification.throttled',
          resourceType: 'alert',
          resourceId: notice.alertId ?? row.id,
          resourceName: notice.body.alert?.title ?? null,
          details: { notificationId: row.id, channelId: channel.id, event: notice.event, step: notice.step },
        });
      if (await store.armDigest(tx, channel.id, reopensAt)) armDigestAt = reopensAt;
      return 'throttled';
    });
  } finally {
    await flushAudit(audit);
  }
  if (queued) await enqueue({ kind: 'notifications.deliver', notificationId: queued });
  if (armDigestAt)
    await enqueue(
      { kind: 'notifications.digest', channelId: notice.channelId },
      Math.max(0, Math.ceil((armDigestAt.getTime() - Date.now()) / 1000)),
    );
  return told;
}

/** The digest of a channel whose throttle window reopened: one notification carrying every held-back one. */
export async function sendDigest(db: Db, channelId: string): Promise<number> {
  const digestId = randomUUID();
  const carried = await db.transaction(async (tx) => {
    const channel = await store.selectSendingChannel(tx, channelId, true);
    if (!channel) return [];
    const items = await store.takeThrottled(tx, channelId, digestId, digestLimit);
    if (items.length === 0 || channel.deleted) return items;
    const body: NoticeBody = {
      items: items.map((item) => ({
        notificationId: item.id,
        alertId: item.alertId,
        event: item.event,
        title: String((item.body as NoticeBody).alert?.title ?? ''),
        severity: String((item.body as NoticeBody).alert?.severity ?? 'low'),
      })),
    };
    await store.insertDigest(tx, { id: digestId, channelId, orgId: channel.orgId, body: { ...body } });
    return items;
  });
  if (carried.length > 0) await enqueue({ kind: 'notifications.deliver', notificationId: digestId });
  // A full digest leaves more behind: the next one is armed at once.
  if (carried.length >= digestLimit && (await store.armDigest(db, channelId, new Date())))
    await enqueue({ kind: 'notifications.digest', channelId });
  return carried.length;
}

export type AttemptResult = 'delivered' | 'retrying' | 'failed' | 'not-due';

/**
 * One attempt of a notification due at `now` (the work queue's job): rendered for its channel type and sent. A 2xx
 * (or a written e-mail) delivers it; anything else is retried after the next delay, and after the last it is
 * `failed` (`alert.notification.failed`). A test is attempted once, with no retry.
 */
export async function attemptNotification(db: Db, id: string, now = new Date()): Promise<AttemptResult> {
  const claimed = await store.claimNotification(db, id, now, Math.ceil(timeoutMs() / 1000) + 30);
  if (!claimed) return 'not-due';
  const channel = claimed.channel;
  const started = performance.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  let refused = false;
  try {
    if (!channel || channel.deleted) throw new Error('channel deleted');
    const message = render(
      channel,
      { ...claimed, body: claimed.body as NoticeBody },
      await channelSecret(db, channel),
      now,
    );
    if (message.kind === 'email')
      await sendMail({ id: claimed.id, to: message.to, subject: message.subject, text: message.text, date: now });
    else {
      const reply = await postOutbound(message.url, {
        timeoutMs: timeoutMs(),
        maxAnswerBytes: 4096,
        headers: { 'user-agent': 'Logbook-Notifications/1', ...message.headers },
        body: message.body,
      });
      statusCode = reply.status;
      if (reply.status < 200 || reply.status >= 300) error = `HTTP ${reply.status}`;
    }
  } catch (failure) {
    const name = (failure as { name?: string }).name;
    refused = failure instanceof OutboundRefused;
    error = refused
      ? (failure as Error).message
      : name === 'TimeoutError'
        ? `No answer within ${timeoutMs()} ms`
        : `Request failed: ${(failure as Error).message ?? String(failure)}`;
  }
  const durationMs = refused ? null : Math.round(performance.now() - started);
  const attempt = { at: now, statusCode, error, durationMs };
  if (error === null) {
    await store.recordNotificationAttempt(db, id, { ...attempt, outcome: 'delivered', nextAttemptAt: null });
    return 'delivered';
  }
  const delay = claimed.event === 'channel.test' ? undefined : retryDelaysSeconds[claimed.attempts];
  if (delay === undefined) {
    await failForGood(db, claimed, attempt);
    return 'failed';
  }
  const nextAttemptAt = new Date(now.getTime() + delay * 1000);
  await store.recordNotificationAttempt(db, id, { ...attempt, outcome: 'pending', nextAttemptAt });
  await enqueue({ kind: 'notifications.deliver', notificationId: id }, delay);
  return 'retrying';
}

async function failForGood(
  db: Db,
  notification: {
    id: string;
    alertId: string | null;
    orgId: string | null;
    event: NoticeEvent;
    channelId: string;
    attempts: number;
    body: Record<string, unknown>;
  },
  attempt: { at: Date; statusCode: number | null; error: string | null; durationMs: number | null },
): Promise<void> {
  const audit = systemAudit(db);
  try {
    await db.transaction(async (tx) => {
      await store.recordNotificationAttempt(tx, notification.id, {
        ...attempt,
        outcome: 'failed',
        nextAttemptAt: null,
      });
      if (notification.orgId && notification.event !== 'channel.test')
        await auditChange(tx, audit, {
          orgId: notification.orgId,
          action: 'alert.notification.failed',
          resourceType: 'alert',
          resourceId: notification.alertId ?? notification.id,
          resourceName: (notification.body as NoticeBody).alert?.title ?? null,
          details: {
            notificationId: notification.id,
            channelId: notification.channelId,
            event: notification.event,
            attempts: notification.attempts + 1,
            error: attempt.error,
          },
          result: 'failure',
          errorMessage: attempt.error,
        });
    });
  } finally {
    await flushAudit(audit);
  }
  logger.warn('A notification failed for good', { notificationId: notification.id, error: attempt.error });
}

/** The channel's secret in the clear; one stored in the clear (no seal key then) is sealed now, on its first read. */
async function channelSecret(db: Db, channel: store.SendingChannel): Promise<string | undefined> {
  if (channel.secret === null) return undefined;
  if (!channel.secretSealed) {
    const sealed = sealSecret(channel.secret);
    if (sealed) await store.updateChannelSecretSealed(db, channel.id, channel.secret, sealed);
    return channel.secret;
  }
  const secret = openSecret(channel.secret);
  if (secret === undefined) throw new Error('its secret cannot be opened (ENROLLMENT_KEY_SEAL_KEY unset or changed)');
  return secret;
}

/**
 * An automation's notify action: one notification on each of the channels that serves the organization (its own, its
 * partner's), throttled like any other. Answers how many channels took it.
 */
export async function tellAutomation(
  db: Db,
  notice: {
    channelIds: string[];
    orgId: string;
    title: string;
    lines: string[];
    dedupeKey: string;
    details: Record<string, unknown>;
  },
): Promise<number> {
  const channelIds = await store.selectServingChannels(db, notice.orgId, notice.channelIds);
  let told = 0;
  for (const channelId of channelIds) {
    const result = await tell(db, {
      channelId,
      alertId: null,
      orgId: notice.orgId,
      event: 'automation.notify',
      step: null,
      dedupeKey: `${notice.dedupeKey}:${channelId}`,
      body: { automation: { title: notice.title, lines: notice.lines, details: notice.details } },
    });
    if (result !== 'gone') told += 1;
  }
  return told;
}
