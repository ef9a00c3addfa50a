/**
 * Sending notifications: each is recorded first (the delivery log), then attempted by a job of the work queue and
 * retried with backoff; a channel's throttle holds back what is over its limit and sends it as one digest when its
 * window reopens.
 */
import { randomUUID } from 'node:crypto';
import { type AuditContext, auditChange, flushAudit, type RouteEvent } from '../audit/writer.ts';
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
 * The channel's row is locked while it counts, so concurrent notices never pass its limit together. While a channel's
 * notices are being recorded, this process's later ones for it wait and are then recorded together (one lock, one
 * statement, one commit), in the order they came; one finding none in flight goes at once.
 */
export function tell(db: Db, notice: Notice): Promise<Told> {
  const byChannel = tellQueues.get(db) ?? new Map<string, WaitingNotice[]>();
  tellQueues.set(db, byChannel);
  const queue = byChannel.get(notice.channelId);
  if (queue) return new Promise((resolve, reject) => queue.push({ notice, resolve, reject }));
  byChannel.set(notice.channelId, []);
  return drainTells(db, byChannel, notice.channelId, tellGroup(db, notice.channelId, [notice]));
}

type WaitingNotice = { notice: Notice; resolve: (told: Told) => void; reject: (error: unknown) => void };

/** Per executor and channel: the notices waiting while a group of that channel is being recorded. */
const tellQueues = new WeakMap<Db, Map<string, WaitingNotice[]>>();

/** At most this many notices in one group; a longer queue goes in several, one after another. */
const maxTellGroup = 500;

/** Waits for the group in flight, then records what queued meanwhile, until nothing waits. */
async function drainTells(db: Db, byChannel: Map<string, WaitingNotice[]>, channelId: string, first: Promise<Told[]>) {
  try {
    return (await first)[0]!;
  } finally {
    void (async () => {
      for (let queue = byChannel.get(channelId)!; queue.length > 0; queue = byChannel.get(channelId)!) {
        const group = queue.splice(0, maxTellGroup);
        await tellGroup(
          db,
          channelId,
          group.map((waiting) => waiting.notice),
        ).then(
          (told) => {
            for (const [i, waiting] of group.entries()) waiting.resolve(told[i]!);
          },
          (error: unknown) => retryAlone(db, group, error),
        );
      }
      byChannel.delete(channelId);
    })();
  }
}

/**
 * A group the database refused for its data (a data or constraint error) is recorded again one notice at a time, so
 * one refused notice fails only its own caller; any other failure (the connection lost, a timeout) fails them all.
 */
async function retryAlone(db: Db, group: WaitingNotice[], error: unknown): Promise<void> {
  const sqlState = String((error as { code?: unknown }).code ?? '');
  if (group.length === 1 || !(sqlState.startsWith('22') || sqlState.startsWith('23'))) {
    for (const waiting of group) waiting.reject(error);
    return;
  }
  for (const waiting of group)
    await tellGroup(db, waiting.notice.channelId, [waiting.notice]).then(
      (told) => waiting.resolve(told[0]!),
      waiting.reject,
    );
}

/** Records notices of one channel in one transaction, as `tell` says, and queues what is due. */
async function tellGroup(db: Db, channelId: string, notices: Notice[]): Promise<Told[]> {
  const audit = systemAudit(db);
  let armDigestAt: Date | undefined;
  const queued: string[] = [];
  let told: Told[];
  try {
    told = await db.transaction(async (tx) => {
      const channel = await store.selectSendingChannel(tx, channelId, true);
      if (!channel || channel.deleted) return notices.map((): Told => 'gone');
      const throttle =
        channel.throttleMax !== null && channel.throttleWindowMinutes !== null
          ? { max: channel.throttleMax, windowMinutes: channel.throttleWindowMinutes }
          : null;
      // A dedupe key twice in one group: the later one is the duplicate.
      const keys = new Set<string>();
      const outcome = notices.map((notice) => {
        if (notice.dedupeKey !== null && keys.has(notice.dedupeKey)) return { notice, id: undefined };
        if (notice.dedupeKey !== null) keys.add(notice.dedupeKey);
        return { notice, id: randomUUID() };
      });
      const rows = await store.insertCountedNotifications(
        tx,
        channelId,
        outcome.flatMap(({ notice, id }) =>
          id
            ? [
                {
                  id,
                  alertId: notice.alertId,
                  orgId: notice.orgId,
                  event: notice.event,
                  step: notice.step,
                  dedupeKey: notice.dedupeKey,
                  body: { ...notice.body },
                },
              ]
            : [],
        ),
        throttle,
      );
      const recorded = new Map(rows.map((row) => [row.id, row]));
      const events: RouteEvent[] = [];
      let reopensAt: Date | undefined;
      const answers = outcome.map(({ notice, id }): Told => {
        const row = id ? recorded.get(id) : undefined;
        if (!row) return 'duplicate';
        if (row.status === 'pending') {
          queued.push(row.id);
          return 'queued';
        }
        reopensAt ??= new Date(new Date(row.oldest).getTime() + throttle!.windowMinutes * 60_000);
        if (notice.orgId)
          events.push({
            orgId: notice.orgId,
            action: 'alert.notification.throttled',
            resourceType: 'alert',
            resourceId: notice.alertId ?? row.id,
            resourceName: notice.body.alert?.title ?? null,
            details: { notificationId: row.id, channelId: channel.id, event: notice.event, step: notice.step },
          });
        return 'throttled';
      });
      if (events.length > 0) await auditChange(tx, audit, events);
      if (reopensAt && (await store.armDigest(tx, channel.id, reopensAt))) armDigestAt = reopensAt;
      return answers;
    });
  } finally {
    await flushAudit(audit);
  }
  for (const id of queued) await enqueue({ kind: 'notifications.deliver', notificationId: id });
  if (armDigestAt)
    await enqueue(
      { kind: 'notifications.digest', channelId },
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
