import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { urlProblem } from '../outbound/address.ts';
import { atLeastOneField, nameText } from '../request-values.ts';

/** Alert severities (the alerts domain's, spelled here since alerts call into this domain and not the reverse). */
export const severities = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof severities)[number];
export const channelTypes = ['email', 'webhook', 'slack', 'teams', 'pagerduty'] as const;
export type ChannelType = (typeof channelTypes)[number];
export const noticeEvents = [
  'alert.created',
  'alert.acknowledged',
  'alert.resolved',
  'alert.escalated',
  'alert.renotified',
  'alert.digest',
  'channel.test',
  'automation.notify',
] as const;
export type NoticeEvent = (typeof noticeEvents)[number];

/** PagerDuty's Events API v2 endpoint, unless a channel names another (a test receiver). */
export const pagerDutyEventsUrl = 'https://events.pagerduty.com/v2/enqueue';

/** A URL the service will call: refused here when its text alone is (shared/outbound/address.ts). */
const endpoint = z
  .url()
  .max(2048)
  .superRefine((text, ctx) => {
    const problem = URL.canParse(text) ? urlProblem(text) : undefined;
    if (problem) ctx.addIssue({ code: 'custom', message: `Refused URL: ${problem}` });
  })
  .meta({ description: 'https:// to a public address (the outbound-address check)' });

const emailConfig = z
  .object({
    to: z
      .array(z.email().max(254))
      .min(1)
      .max(50)
      .transform((list) => [...new Set(list)]),
  })
  .strict();
const urlConfig = z.object({ url: endpoint }).strict();
const pagerDutyConfig = z.object({ url: endpoint.optional() }).strict();
const configByType = {
  email: emailConfig,
  webhook: urlConfig,
  slack: urlConfig,
  teams: urlConfig,
  pagerduty: pagerDutyConfig,
};
export type ChannelConfig = { to?: string[]; url?: string };

const throttle = z
  .object({ max: z.number().int().min(1).max(10_000), windowMinutes: z.number().int().min(1).max(1440) })
  .strict()
  .meta({
    id: 'NotificationThrottle',
    description: 'At most max notifications per windowMinutes; the rest go into a digest',
  });

const secret = z.string().min(16).max(512);

/** The config each type takes, checked against the channel's type; issues name body.config.<field>. */
function checkConfig(body: { type?: ChannelType; config?: unknown }, ctx: z.RefinementCtx) {
  if (!body.type || body.config === undefined) return;
  const parsed = configByType[body.type].safeParse(body.config);
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      ctx.addIssue({ code: 'custom', path: ['config', ...issue.path.map(String)], message: issue.message });
  else body.config = parsed.data;
}

export const createChannel = z
  .object({
    orgId: z.uuid().optional(),
    availability: z.enum(['organization', 'partner']).optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only, for availability partner' }),
    name: nameText(255),
    type: z.enum(channelTypes),
    config: z.record(z.string(), z.unknown()).meta({
      description:
        'email { to: [addresses] }; webhook, slack, teams { url }; pagerduty { url? } (the Events API v2 endpoint, its public address by default)',
    }),
    secret: secret.optional().meta({
      description:
        'Webhook: the HMAC-SHA256 key (left out, one is generated and shown once); PagerDuty: the routing key. Sealed, never returned',
    }),
    throttle: throttle.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.availability === 'partner' && body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner channel names no organization' });
    if (body.availability !== 'partner' && !body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
    if (body.type === 'pagerduty' && !body.secret)
      ctx.addIssue({
        code: 'custom',
        path: ['secret'],
        message: 'A PagerDuty channel needs its routing key as secret',
      });
    if (body.secret && ['email', 'slack', 'teams'].includes(body.type))
      ctx.addIssue({ code: 'custom', path: ['secret'], message: `A ${body.type} channel takes no secret` });
    checkConfig(body as { type: ChannelType; config: unknown }, ctx);
  });
export type CreateChannel = z.output<typeof createChannel>;

export const updateChannel = atLeastOneField(
  z
    .object({
      name: nameText(255).optional(),
      config: z.record(z.string(), z.unknown()).optional(),
      secret: secret.optional(),
      rotateSecret: z.literal(true).optional().meta({ description: 'Webhook: generate a new secret, shown once' }),
      throttle: throttle.nullable().optional(),
    })
    .strict(),
);
export type UpdateChannel = z.output<typeof updateChannel>;

export const channel = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['organization', 'partner']),
    name: z.string(),
    type: z.enum(channelTypes),
    config: z.record(z.string(), z.unknown()),
    hasSecret: z.boolean(),
    secret: z.string().optional().meta({ description: 'Only in the reply that generated it: shown once' }),
    throttle: throttle.nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'NotificationChannel' });
export const channelPage = pageOf(channel).meta({ id: 'NotificationChannelPage' });
export const channelParams = z.object({ channelId: z.uuid() });
export const listQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: z.uuid().optional().meta({ description: "An organization's own, and its partner's" }),
});
export type ListQuery = z.output<typeof listQuery>;

const step = z
  .object({
    afterMinutes: z.number().int().min(0).max(10_080),
    channelIds: z
      .array(z.uuid())
      .min(1)
      .max(20)
      .transform((list) => [...new Set(list)]),
  })
  .strict();
const steps = z
  .array(step)
  .min(1)
  .max(10)
  .superRefine((list, ctx) => {
    for (let n = 1; n < list.length; n++)
      if (list[n]!.afterMinutes <= list[n - 1]!.afterMinutes)
        ctx.addIssue({ code: 'custom', path: [n, 'afterMinutes'], message: 'Steps come later one after another' });
  })
  .meta({ description: 'Unacknowledged afterMinutes after it was notified, the alert goes to channelIds' });

export const createPolicy = z
  .object({
    orgId: z.uuid().optional(),
    availability: z.enum(['organization', 'partner']).optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only, for availability partner' }),
    name: nameText(255),
    steps,
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.availability === 'partner' && body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner policy names no organization' });
    if (body.availability !== 'partner' && !body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
  });
export type CreatePolicy = z.output<typeof createPolicy>;
export const updatePolicy = atLeastOneField(
  z.object({ name: nameText(255).optional(), steps: steps.optional() }).strict(),
);
export type UpdatePolicy = z.output<typeof updatePolicy>;
export type Step = z.output<typeof step>;

export const policy = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['organization', 'partner']),
    name: z.string(),
    steps: z.array(z.object({ afterMinutes: z.number().int(), channelIds: z.array(z.uuid()) }).strict()),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'EscalationPolicy' });
export const policyPage = pageOf(policy).meta({ id: 'EscalationPolicyPage' });
export const policyParams = z.object({ policyId: z.uuid() });

const severityChannels = z
  .object(
    Object.fromEntries(severities.map((s) => [s, z.array(z.uuid()).max(20).optional()])) as Record<
      Severity,
      z.ZodOptional<z.ZodArray<z.ZodUUID>>
    >,
  )
  .strict();
export const putDefaults = z
  .object({ channels: severityChannels.default({}), escalationPolicyId: z.uuid().nullable().optional() })
  .strict();
export type PutDefaults = z.output<typeof putDefaults>;
export const defaults = z
  .object({
    channels: z.object(
      Object.fromEntries(severities.map((s) => [s, z.array(z.uuid())])) as Record<Severity, z.ZodArray<z.ZodUUID>>,
    ),
    escalationPolicyId: z.uuid().nullable(),
    inherited: z
      .array(z.enum([...severities, 'escalationPolicyId']))
      .meta({ description: "What comes from the partner's defaults (an organization without its own for them)" }),
  })
  .strict()
  .meta({ id: 'NotificationDefaults' });

const attempt = z
  .object({
    at: z.iso.datetime({ offset: true }),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    durationMs: z.number().int().nullable(),
  })
  .strict();
export const notification = z
  .object({
    id: z.uuid(),
    channelId: z.uuid(),
    channelType: z.enum(channelTypes),
    alertId: z.uuid().nullable(),
    event: z.enum(noticeEvents),
    step: z.number().int().nullable().meta({ description: 'The escalation step (0 = the first notice)' }),
    status: z.enum(['pending', 'delivered', 'failed', 'throttled', 'digested']),
    attempts: z.number().int(),
    nextAttemptAt: timestampReply.nullable(),
    lastError: z.string().nullable(),
    log: z.array(attempt),
    digestId: z.uuid().nullable().meta({ description: 'The digest that carried a throttled notification' }),
    createdAt: timestampReply,
    deliveredAt: timestampReply.nullable(),
  })
  .strict()
  .meta({ id: 'Notification' });
export const notificationPage = pageOf(notification).meta({ id: 'NotificationPage' });
export const alertParams = z.object({ alertId: z.uuid() });
export const testReply = notification.meta({ id: 'NotificationTest' });
export const partnerParams = z.object({ partnerId: z.uuid() });
export const pageParams = z.object(pageQuery({ defaultLimit: 50, maxLimit: 200 }));
