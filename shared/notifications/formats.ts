/**
 * What each channel type is sent, in its documented format: a signed JSON event (webhook, signed as PSA deliveries
 * are), a Slack incoming-webhook message (text and blocks), a Microsoft Teams message carrying an Adaptive Card, a
 * PagerDuty Events API v2 event (trigger, acknowledge or resolve, with a dedup key that makes the incident follow the
 * alert), or an e-mail (subject and plain text).
 */
import { createHmac } from 'node:crypto';
import { type NoticeEvent, pagerDutyEventsUrl } from './schemas.ts';
import type { SendingChannel } from './store.ts';

/** The alert as recorded in a notification's body when it was armed. */
export interface NoticeBody {
  alert?: {
    id: string;
    orgId: string;
    orgName: string;
    deviceId: string | null;
    hostname: string | null;
    source: Record<string, unknown>;
    severity: string;
    title: string;
    status: string;
    details: Record<string, unknown>;
    createdAt: string;
  };
  step?: number;
  /** A digest's items: what the throttle held back. */
  items?: { notificationId: string; alertId: string | null; event: NoticeEvent; title: string; severity: string }[];
  /** A test's channel name. */
  channelName?: string;
  /** An automation's notify action: what ran where. */
  automation?: { title: string; lines: string[]; details: Record<string, unknown> };
}

export type Message =
  | { kind: 'http'; url: string; headers: Record<string, string>; body: string }
  | { kind: 'email'; to: string[]; subject: string; text: string };

/** The signature header of a webhook: `sha256=` and the hex HMAC-SHA256 of `<timestamp>.<body>`. */
export function signature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

const verbs: Record<NoticeEvent, string> = {
  'alert.created': 'raised',
  'alert.acknowledged': 'acknowledged',
  'alert.resolved': 'resolved',
  'alert.escalated': 'unacknowledged: escalated',
  'alert.renotified': 'still firing',
  'alert.digest': 'digest',
  'channel.test': 'test',
  'automation.notify': 'automation',
};

/** One line saying what happened, for chat messages, e-mail subjects and PagerDuty summaries. */
export function headline(event: NoticeEvent, body: NoticeBody): string {
  if (event === 'channel.test') return `Logbook test notification for channel "${body.channelName}"`;
  if (event === 'automation.notify') return body.automation!.title;
  if (event === 'alert.digest') return `Logbook: ${body.items?.length ?? 0} notifications held back by the throttle`;
  const alert = body.alert!;
  const step =
    event === 'alert.escalated'
      ? ` (step ${(body.step ?? 0) + 1})`
      : event === 'alert.renotified'
        ? ` (reminder ${body.step ?? 1})`
        : '';
  return `[${alert.severity.toUpperCase()}] ${alert.title}: ${verbs[event]}${step}`;
}

/** The lines of a message's text: the alert's facts, or the digest's items. */
function lines(event: NoticeEvent, body: NoticeBody): string[] {
  if (event === 'channel.test') return ['This is a test: the channel is set up and reachable.'];
  if (event === 'automation.notify') return body.automation!.lines;
  if (event === 'alert.digest')
    return (body.items ?? []).map((item) => `• [${item.severity.toUpperCase()}] ${item.title} (${verbs[item.event]})`);
  const alert = body.alert!;
  return [
    `Organization: ${alert.orgName}`,
    ...(alert.hostname ? [`Device: ${alert.hostname}`] : []),
    `Severity: ${alert.severity}`,
    `Status: ${alert.status}`,
    `Raised: ${alert.createdAt}`,
    `Alert: ${alert.id}`,
  ];
}

const pagerDutySeverity: Record<string, string> = {
  critical: 'critical',
  high: 'error',
  medium: 'warning',
  low: 'info',
};
const pagerDutyAction: Partial<Record<NoticeEvent, string>> = {
  'alert.acknowledged': 'acknowledge',
  'alert.resolved': 'resolve',
};

/** Renders one notification for its channel; `secret` is the channel's secret in the clear (webhook, PagerDuty). */
export function render(
  channel: SendingChannel,
  notification: { id: string; event: NoticeEvent; body: NoticeBody; createdAt: Date },
  secret: string | undefined,
  now: Date,
): Message {
  const { event, body } = notification;
  const title = headline(event, body);
  const text = lines(event, body);
  switch (channel.type) {
    case 'email':
      return { kind: 'email', to: channel.config.to ?? [], subject: title, text: [title, '', ...text].join('\n') };
    case 'slack':
      return json(channel.config.url!, {
        text: title,
        blocks: [
          { type: 'header', text: { type: 'plain_text', text: title.slice(0, 150) } },
          { type: 'section', text: { type: 'mrkdwn', text: text.join('\n').slice(0, 3000) } },
        ],
      });
    case 'teams':
      return json(channel.config.url!, {
        type: 'message',
        attachments: [
          {
            contentType: 'application/vnd.microsoft.card.adaptive',
            contentUrl: null,
            content: {
              $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
              type: 'AdaptiveCard',
              version: '1.4',
              body: [
                { type: 'TextBlock', text: title, weight: 'Bolder', size: 'Medium', wrap: true },
                ...text.map((line) => ({ type: 'TextBlock', text: line, wrap: true, spacing: 'None' })),
              ],
            },
          },
        ],
      });
    case 'pagerduty':
      return json(channel.config.url ?? pagerDutyEventsUrl, pagerDutyEvent(notification, secret ?? '', title, text));
    case 'webhook': {
      const payload = JSON.stringify({ id: notification.id, event, occurredAt: now.toISOString(), ...body });
      const timestamp = String(Math.floor(now.getTime() / 1000));
      return {
        kind: 'http',
        url: channel.config.url!,
        headers: {
          'content-type': 'application/json',
          'x-logbook-event': event,
          'x-logbook-delivery': notification.id,
          'x-logbook-timestamp': timestamp,
          'x-logbook-signature': signature(secret ?? '', timestamp, payload),
        },
        body: payload,
      };
    }
  }
}

/** A PagerDuty event: the alert's dedup key makes acknowledge and resolve follow the incident its trigger opened. */
function pagerDutyEvent(
  notification: { id: string; event: NoticeEvent; body: NoticeBody; createdAt: Date },
  routingKey: string,
  summary: string,
  text: string[],
) {
  const { event, body } = notification;
  const dedupKey = body.alert ? `logbook-alert-${body.alert.id}` : `logbook-${notification.id}`;
  const action = pagerDutyAction[event];
  if (action) return { routing_key: routingKey, event_action: action, dedup_key: dedupKey };
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key: dedupKey,
    payload: {
      summary: summary.slice(0, 1024),
      source: body.alert?.hostname ?? body.alert?.orgName ?? 'logbook',
      severity: pagerDutySeverity[body.alert?.severity ?? 'low'] ?? 'info',
      timestamp: (body.alert?.createdAt ? new Date(body.alert.createdAt) : notification.createdAt).toISOString(),
      component: body.alert ? String(body.alert.source.type) : undefined,
      group: body.alert?.orgName,
      custom_details: { lines: text, alertId: body.alert?.id ?? null, step: body.step ?? null },
    },
  };
}

function json(url: string, value: unknown): Message {
  return { kind: 'http', url, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}
