import { z } from 'zod';
import { agentTimestamp, queryInstant, storableText } from '../agents/schemas.ts';
import { severities } from '../alerts/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { nameText, optionalParam } from '../request-values.ts';
import { compileSchedule, ScheduleProblem } from '../schedules/engine.ts';
import { localDateTime, rruleText, timezone } from '../schedules/schemas.ts';
import { normaliseCategory, patchSeverities, rebootPolicies } from './patch-vocabulary.ts';

export const policyKinds = ['monitoring', 'patching', 'automation'] as const;
export type PolicyKind = (typeof policyKinds)[number];
export const assignmentLevels = ['partner', 'organization', 'site', 'group', 'device'] as const;
export type AssignmentLevel = (typeof assignmentLevels)[number];
export const exemptionLevels = ['site', 'group', 'device'] as const;
export const deviceRoles = ['workstation', 'server'] as const;
export const monitorStates = ['ok', 'pending', 'firing'] as const;
export type MonitorStateName = (typeof monitorStates)[number];
export const metricNames = ['cpu.percent', 'memory.percent', 'disk.freePercent', 'disk.freeBytes'] as const;

const itemKey = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/, 'A key is 1 to 100 letters, digits, dots, dashes, colons or underscores')
  .meta({ description: 'Unique in its policy: what precedence, exemptions and alerts name' });

/** What every item has, whatever its type. */
const common = {
  key: itemKey,
  severity: z.enum(severities),
  autoResolve: z.boolean().default(true).meta({ description: 'Resolve the alert when the condition clears' }),
  renotifyMinutes: z.number().int().min(1).max(525_600).optional(),
  channels: z.array(z.uuid()).max(20).optional().meta({ description: 'Notification channels of the alert' }),
  escalationPolicyId: z.uuid().optional(),
};
const seconds = (max: number) => z.number().int().min(0).max(max);

const metricItem = z
  .object({
    ...common,
    type: z.literal('metric'),
    metric: z.enum(metricNames),
    volume: storableText({ min: 1, max: 255 }).optional().meta({ description: 'The volume of a disk metric (C:, /)' }),
    op: z.enum(['gt', 'lt']),
    threshold: z.number().finite(),
    clearThreshold: z.number().finite(),
    windowSeconds: seconds(86_400).min(1),
    aggregation: z.enum(['avg', 'max', 'min', 'last']),
    pendingSeconds: seconds(86_400).default(0),
  })
  .strict()
  .superRefine((item, ctx) => {
    // Hysteresis: the clear threshold lies on the healthy side of the firing one (or on it).
    if (item.op === 'gt' ? item.clearThreshold > item.threshold : item.clearThreshold < item.threshold)
      ctx.addIssue({
        code: 'custom',
        path: ['clearThreshold'],
        message: `clearThreshold must be ${item.op === 'gt' ? 'at most' : 'at least'} threshold`,
      });
    if (item.volume !== undefined && !item.metric.startsWith('disk.'))
      ctx.addIssue({ code: 'custom', path: ['volume'], message: 'Only disk metrics have a volume' });
  });
const offlineItem = z
  .object({ ...common, type: z.literal('offline'), minutes: z.number().int().min(1).max(43_200) })
  .strict();
const serviceItem = z
  .object({
    ...common,
    type: z.literal('service'),
    name: storableText({ min: 1, max: 255 }),
    expect: z.enum(['running', 'stopped']),
  })
  .strict();
const processItem = z
  .object({
    ...common,
    type: z.literal('process'),
    name: storableText({ min: 1, max: 255 }),
    expect: z.enum(['present', 'absent']),
  })
  .strict();
const eventLogItem = z
  .object({
    ...common,
    type: z.literal('event-log'),
    source: storableText({ min: 1, max: 255 }).optional(),
    eventId: z.number().int().min(0).max(4_294_967_295).optional(),
    level: z.enum(['info', 'warning', 'error', 'critical']).optional(),
    text: storableText({ min: 1, max: 500 }).optional(),
    count: z.number().int().min(1).max(1_000_000),
    windowSeconds: seconds(7 * 86_400).min(1),
  })
  .strict();
const scriptItem = z
  .object({
    ...common,
    type: z.literal('script'),
    scriptId: z.uuid(),
    intervalMinutes: z.number().int().min(1).max(10_080),
    parameters: z.record(z.string(), z.string().max(4000)).optional(),
  })
  .strict();

export const monitoringItem = z.discriminatedUnion('type', [
  metricItem,
  offlineItem,
  serviceItem,
  processItem,
  eventLogItem,
  scriptItem,
]);
export type MonitoringItem = z.output<typeof monitoringItem>;
export type MetricItem = z.output<typeof metricItem>;

/** An automation item: a partner automation the policy brings to the devices it is assigned to. */
const automationItem = z
  .object({ key: itemKey, type: z.literal('automation'), automationId: z.uuid() })
  .strict()
  .meta({ description: 'A partner automation (availability partner) applied where the policy is assigned' });

/** Items of the kinds still to come: a key and their settings, checked when their kind is built. */
const genericItem = z.looseObject({ key: itemKey, type: z.string().min(1).max(50) });

/**
 * Patching: an approval rule approves the patches whose severity and category both match (an absent list matches
 * any); vendors' category words are normalised ("Security Updates" → security).
 */
const approvalRuleItem = z
  .object({
    key: itemKey,
    type: z.literal('approval-rule'),
    severities: z.array(z.enum(patchSeverities)).min(1).max(10).optional(),
    categories: z
      .array(z.string().trim().min(1).max(100))
      .min(1)
      .max(30)
      .transform((list) => [...new Set(list.map(normaliseCategory))])
      .optional()
      .meta({ description: 'Categories, normalised (security, critical, definition, feature, driver, ...)' }),
  })
  .strict();

/** A ring's install schedule: the schedule engine's recurrence in an IANA zone. */
const ringSchedule = z
  .object({
    rrule: rruleText.optional().meta({ description: 'RFC 5545 RRULE without the RRULE: prefix; left out, a one-off' }),
    start: localDateTime,
    timezone,
    exdates: z.array(localDateTime).max(500).optional(),
  })
  .strict()
  .superRefine((schedule, ctx) => {
    try {
      compileSchedule(schedule);
    } catch (error) {
      if (!(error instanceof ScheduleProblem)) throw error;
      ctx.addIssue({ code: 'custom', path: [error.field], message: error.message });
    }
  });

/** A ring of a patching policy: its members, its deferral and deadline, its installs and its promotion gate. */
const ringItem = z
  .object({
    key: itemKey,
    type: z.literal('ring'),
    id: z.uuid().optional().meta({ description: 'Given by the server; kept while the ring keeps its key' }),
    name: storableText({ min: 1, max: 255 }).optional(),
    order: z.number().int().min(0).max(1000),
    groupIds: z
      .array(z.uuid())
      .max(100)
      .default([])
      .transform((list) => [...new Set(list)]),
    deferralDays: z.number().int().min(0).max(365).default(0),
    deadlineDays: z.number().int().min(0).max(365).default(7),
    schedule: ringSchedule.optional(),
    windowMinutes: z.number().int().min(1).max(10_080).default(240),
    rebootPolicy: z.enum(rebootPolicies).default('if-required'),
    rebootWarningMinutes: z.number().int().min(0).max(1440).default(15),
    promotion: z
      .object({
        minDevices: z.number().int().min(0).max(1_000_000).default(1),
        minSuccessPercent: z.number().min(0).max(100).default(100),
        soakHours: z.number().min(0).max(8760).default(0),
      })
      .strict()
      .default({ minDevices: 1, minSuccessPercent: 100, soakHours: 0 }),
  })
  .strict();
export type RingItem = z.output<typeof ringItem>;
export type ApprovalRuleItem = z.output<typeof approvalRuleItem>;

export const patchingItem = z.discriminatedUnion('type', [approvalRuleItem, ringItem]);
const patchingItems = z.array(patchingItem).superRefine((list, ctx) => {
  const orders = new Map<number, number>();
  list.forEach((item, index) => {
    if (item.type !== 'ring') return;
    if (orders.has(item.order))
      ctx.addIssue({ code: 'custom', path: [index, 'order'], message: `Another ring has order ${item.order}` });
    orders.set(item.order, index);
  });
});

const items = z
  .array(z.unknown())
  .max(200)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((item, index) => {
      const key = (item as { key?: unknown } | null)?.key;
      if (typeof key === 'string' && seen.has(key))
        ctx.addIssue({ code: 'custom', path: [index, 'key'], message: `The key ${key} is used twice in this policy` });
      if (typeof key === 'string') seen.add(key);
    });
  });

/** Items checked against their kind's shapes (monitoring items in full). */
export function checkItems(kind: PolicyKind, list: unknown[]) {
  if (kind === 'monitoring') return z.array(monitoringItem).safeParse(list);
  if (kind === 'patching') return patchingItems.safeParse(list);
  if (kind === 'automation') return z.array(automationItem).safeParse(list);
  return z.array(genericItem).safeParse(list);
}

export const createPolicy = z
  .object({
    kind: z.enum(policyKinds),
    name: nameText(255),
    orgId: z.uuid().optional().meta({ description: 'The owning organization; left out with availability partner' }),
    availability: z
      .literal('partner')
      .optional()
      .meta({ description: "A library of the partner's: assignable in each of its organizations" }),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers creating a partner library' }),
    items: items.default([]),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.orgId && body.availability)
      ctx.addIssue({ code: 'custom', path: ['availability'], message: 'Give orgId or availability, not both' });
    if (!body.orgId && !body.availability)
      ctx.addIssue({
        code: 'custom',
        path: ['orgId'],
        message: 'Give orgId (an organization policy) or availability "partner" (a partner library)',
      });
  });
export type CreatePolicy = z.output<typeof createPolicy>;

export const updatePolicy = z
  .object({ name: nameText(255).optional(), items: items.optional() })
  .strict()
  .refine((body) => body.name !== undefined || body.items !== undefined, 'Give name or items to change');
export type UpdatePolicy = z.output<typeof updatePolicy>;

export const policy = z
  .object({
    id: z.uuid(),
    kind: z.enum(policyKinds),
    name: z.string(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['partner', 'organization']),
    version: z.number().int(),
    items: z.array(z.record(z.string(), z.unknown())),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'Policy' });
export const policyPage = pageOf(policy).meta({ id: 'PolicyPage' });
export const listPoliciesQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  kind: optionalParam(z.enum(policyKinds)),
  orgId: optionalParam(z.uuid()).meta({ description: "An organization's own policies" }),
  availability: optionalParam(z.enum(['partner', 'organization'])),
});
export const policyParams = z.object({ id: z.uuid() });
export const policyVersion = z
  .object({
    version: z.number().int(),
    name: z.string(),
    items: z.array(z.record(z.string(), z.unknown())),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'PolicyVersion' });
export const policyVersionPage = pageOf(policyVersion).meta({ id: 'PolicyVersionPage' });
export const pageOnly = z.object(pageQuery({ defaultLimit: 50, maxLimit: 200 }));

const osType = z.string().trim().toLowerCase().min(1).max(50);
export const createAssignment = z
  .object({
    level: z.enum(assignmentLevels),
    targetId: z.uuid().meta({ description: 'The partner, organization, site, device group or device' }),
    priority: z.number().int().min(0).max(1_000_000).default(100).meta({
      description: 'Among assignments of one level, the lower number wins (default 100)',
    }),
    osTypes: z.array(osType).min(1).max(20).optional().meta({ description: 'Only devices of these OS types' }),
    roles: z.array(z.enum(deviceRoles)).min(1).max(2).optional().meta({ description: 'Only devices of these roles' }),
  })
  .strict();
export type CreateAssignment = z.output<typeof createAssignment>;
export const assignment = z
  .object({
    id: z.uuid(),
    policyId: z.uuid(),
    level: z.enum(assignmentLevels),
    targetId: z.uuid(),
    orgId: z.uuid().nullable(),
    priority: z.number().int(),
    osTypes: z.array(z.string()).nullable(),
    roles: z.array(z.enum(deviceRoles)).nullable(),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'PolicyAssignment' });
export const assignmentPage = pageOf(assignment).meta({ id: 'PolicyAssignmentPage' });
export const assignmentParams = z.object({ id: z.uuid() });

export const createExemption = z
  .object({
    itemKey,
    level: z.enum(exemptionLevels),
    targetId: z.uuid().meta({ description: 'The site, device group or device' }),
    reason: storableText({ min: 1, max: 1000 }),
  })
  .strict();
export type CreateExemption = z.output<typeof createExemption>;
export const exemption = z
  .object({
    id: z.uuid(),
    policyId: z.uuid(),
    itemKey: z.string(),
    level: z.enum(exemptionLevels),
    targetId: z.uuid(),
    orgId: z.uuid(),
    reason: z.string(),
    createdBy: z.record(z.string(), z.unknown()).nullable(),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'PolicyExemption' });
export const exemptionPage = pageOf(exemption).meta({ id: 'PolicyExemptionPage' });

export const putInheritance = z.object({ block: z.boolean() }).strict();
export const inheritance = z.object({ block: z.boolean() }).strict().meta({ id: 'PolicyInheritance' });
export const siteInheritanceParams = z.object({ id: z.uuid(), siteId: z.uuid() });

/** Where an effective item came from. */
const origin = z
  .object({
    policyId: z.uuid(),
    policyName: z.string(),
    policyVersion: z.number().int(),
    assignmentId: z.uuid(),
    level: z.enum(assignmentLevels),
    targetId: z.uuid(),
    priority: z.number().int(),
  })
  .strict();
export const effectivePolicies = z
  .object({
    deviceId: z.uuid(),
    kind: z.enum(policyKinds),
    configVersion: z.string(),
    items: z.array(
      z
        .object({
          key: z.string(),
          item: z.record(z.string(), z.unknown()),
          origin,
          overridden: z
            .array(origin)
            .meta({ description: 'Assignments of the same key that lost to this one, in precedence order' }),
        })
        .strict(),
    ),
    exempted: z.array(
      z
        .object({
          key: z.string(),
          origin,
          exemption: z.object({ id: z.uuid(), level: z.enum(exemptionLevels), targetId: z.uuid(), reason: z.string() }),
        })
        .strict(),
    ),
    blocked: z.array(origin).meta({ description: 'Assignments that block inheritance kept from this device' }),
  })
  .strict()
  .meta({ id: 'EffectivePolicies' });
export const effectiveQuery = z.object({ kind: optionalParam(z.enum(policyKinds)).default('monitoring') });

export const monitorState = z
  .object({
    itemKey: z.string(),
    type: z.string(),
    policyId: z.uuid(),
    policyVersion: z.number().int(),
    state: z.enum(monitorStates),
    since: timestampReply,
    conditionSince: timestampReply.nullable(),
    lastValue: z.number().nullable(),
    lastEvaluatedAt: timestampReply.nullable(),
    firedCount: z.number().int(),
    resolvedCount: z.number().int(),
    alertId: z.uuid().nullable(),
  })
  .strict()
  .meta({ id: 'MonitorState' });
export const monitorStateList = z
  .object({ data: z.array(monitorState) })
  .strict()
  .meta({ id: 'MonitorStates' });

export const metricsQuery = z.object({
  metric: z.enum(metricNames).meta({ description: 'The metric, as items name it' }),
  volume: optionalParam(z.string().max(255)),
  from: queryInstant('Samples at or after this time (default: 24 hours ago)'),
  to: queryInstant('Samples before this time (default: now)'),
  limit: optionalParam(z.coerce.number().int().min(1).max(10_000)).default(1_440),
});
export const metricSeries = z
  .object({
    metric: z.enum(metricNames),
    samples: z.array(
      z.object({ volume: z.string().nullable(), value: z.number(), timestamp: timestampReply }).strict(),
    ),
  })
  .strict()
  .meta({ id: 'MetricSeries' });

/** PUT /agents/{id}/metrics. */
export const metricUpload = z
  .object({
    samples: z
      .array(
        z
          .object({
            metric: z.enum(metricNames),
            volume: storableText({ min: 1, max: 255 }).nullish(),
            value: z.number().finite(),
            timestamp: agentTimestamp(),
          })
          .strict(),
      )
      .min(1)
      .max(5_000),
  })
  .strict()
  .meta({ id: 'MetricUpload' });
export const checkResultUpload = z
  .object({
    results: z
      .array(
        z
          .object({
            itemKey,
            status: z.enum(['pass', 'fail']),
            value: z.number().finite().nullish(),
            output: storableText({ max: 4000 }).nullish(),
            timestamp: agentTimestamp(),
          })
          .strict(),
      )
      .min(1)
      .max(1_000),
  })
  .strict()
  .meta({ id: 'CheckResultUpload' });
export const uploadReply = z
  .object({
    accepted: z.number().int().meta({ description: 'Samples or results stored now' }),
    duplicates: z.number().int().meta({ description: 'Already stored (same device, item or metric, and time)' }),
    ignored: z.number().int().meta({ description: 'Results naming no item in force on the device' }),
    transitions: z.array(
      z.object({ itemKey: z.string(), from: z.enum(monitorStates), to: z.enum(monitorStates) }).strict(),
    ),
  })
  .strict()
  .meta({ id: 'MonitoringUploadReply' });

export const agentConfig = z
  .object({
    configVersion: z.string(),
    monitoring: z.array(z.record(z.string(), z.unknown())),
  })
  .strict()
  .meta({ id: 'AgentConfig' });

export const backtestBody = z
  .object({
    from: z.iso.datetime({ offset: true }),
    to: z.iso.datetime({ offset: true }),
    orgId: z.uuid().optional(),
  })
  .strict()
  .refine((b) => Date.parse(b.from) < Date.parse(b.to), { path: ['to'], message: 'to must be after from' });
export const backtestParams = z.object({ id: z.uuid(), itemKey });
export const backtestReply = z
  .object({
    policyId: z.uuid(),
    itemKey: z.string(),
    policyVersion: z.number().int(),
    from: timestampReply,
    to: timestampReply,
    devices: z.array(
      z
        .object({
          deviceId: z.uuid(),
          hostname: z.string(),
          samples: z.number().int(),
          fired: z.number().int(),
          resolved: z.number().int(),
          firingAtEnd: z.boolean(),
        })
        .strict(),
    ),
    totals: z.object({ devices: z.number().int(), fired: z.number().int(), resolved: z.number().int() }).strict(),
  })
  .strict()
  .meta({ id: 'BacktestReply' });

export const putMonitoringSettings = z
  .object({
    sampleRetentionDays: z.number().int().min(1).max(3650).nullable().meta({
      description: 'Days metric samples and check results are kept; null: the default (30)',
    }),
  })
  .strict();
export const monitoringSettings = z
  .object({
    orgId: z.uuid(),
    sampleRetentionDays: z.number().int().meta({ description: 'In force: the override, else the default' }),
    override: z.number().int().nullable(),
  })
  .strict()
  .meta({ id: 'MonitoringSettings' });
