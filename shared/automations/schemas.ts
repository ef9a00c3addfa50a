import { z } from 'zod';
import { alertSources, severities } from '../alerts/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { deviceFilter } from '../device-groups/schemas.ts';
import { atLeastOneField, nameText } from '../request-values.ts';
import { localDateTime, occurrence, rruleText, timezone } from '../schedules/schemas.ts';

/** The events an automation can be triggered by; each is fired by the write that causes it. */
export const automationEvents = [
  'device.enrolled',
  'device.online',
  'device.offline',
  'alert.raised',
  'custom_field.changed',
  'posture.detected',
] as const;

const ids = (max: number) =>
  z
    .array(z.uuid())
    .min(1)
    .max(max)
    .transform((list) => [...new Set(list.map((id) => id.toLowerCase()))]);

const scheduleTrigger = z
  .object({
    type: z.literal('schedule'),
    schedule: z
      .object({
        rrule: rruleText
          .optional()
          .meta({ description: 'RFC 5545 RRULE without the RRULE: prefix; left out, a one-off' }),
        start: localDateTime.meta({ description: 'DTSTART: a local date-time without offset' }),
        timezone: timezone.optional().meta({
          description: "IANA zone; left out, each device's local time (its site's zone): one occurrence per zone",
        }),
        misfire: z.enum(['skip', 'run-once-late']).default('run-once-late'),
        graceMinutes: z.number().int().min(0).max(10_080).default(60),
      })
      .strict(),
  })
  .strict();

const eventTrigger = z
  .object({
    type: z.literal('event'),
    event: z.enum(automationEvents),
    filter: z
      .object({
        severities: z.array(z.enum(severities)).min(1).max(4).optional().meta({ description: 'alert.raised' }),
        sources: z.array(z.enum(alertSources)).min(1).max(3).optional().meta({ description: 'alert.raised' }),
        key: z.string().min(1).max(100).optional().meta({ description: 'custom_field.changed: the field key' }),
        value: z
          .union([z.string().max(4000), z.number(), z.boolean()])
          .optional()
          .meta({ description: 'custom_field.changed: the value it changed to' }),
        category: z.string().min(1).max(100).optional().meta({ description: 'posture.detected: the category' }),
      })
      .strict()
      .optional(),
  })
  .strict();

export const trigger = z.discriminatedUnion('type', [
  scheduleTrigger,
  eventTrigger,
  z.object({ type: z.literal('manual') }).strict(),
  z.object({ type: z.literal('webhook') }).strict(),
]);
export type Trigger = z.output<typeof trigger>;
export type ScheduleTrigger = z.output<typeof scheduleTrigger>;

const onFailure = z.enum(['stop', 'continue']).default('stop');
const parameterValue = z.union([z.string().max(4000), z.number(), z.boolean()]);

export const action = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('run-script'),
      scriptId: z.uuid(),
      parameters: z.record(z.string().max(100), parameterValue).optional(),
      onFailure,
    })
    .strict(),
  z
    .object({
      type: z.literal('set-custom-field'),
      key: z.string().min(1).max(100),
      value: z.union([z.string().max(4000), z.number(), z.boolean()]),
      onFailure,
    })
    .strict(),
  z.object({ type: z.literal('add-to-group'), groupId: z.uuid(), onFailure }).strict(),
  z.object({ type: z.literal('remove-from-group'), groupId: z.uuid(), onFailure }).strict(),
  z
    .object({
      type: z.literal('raise-alert'),
      severity: z.enum(severities),
      title: nameText(255),
      onFailure,
    })
    .strict(),
  z.object({ type: z.literal('notify'), channelIds: ids(20), onFailure }).strict(),
]);
export type Action = z.output<typeof action>;

export const guards = z
  .object({
    maxRunsPerDevice: z.number().int().min(1).max(10_000).default(10),
    windowMinutes: z.number().int().min(1).max(10_080).default(60),
    concurrency: z.enum(['skip', 'queue']).default('skip'),
    respectMaintenance: z.boolean().default(true),
  })
  .strict()
  .meta({
    description:
      'Loop guard: at most maxRunsPerDevice runs per device per windowMinutes (manual runs not counted); concurrency per device; maintenance windows that suppress automations',
  });
export type Guards = z.output<typeof guards>;
export const defaultGuards: Guards = guards.parse({});

export const createAutomation = z
  .object({
    orgId: z.uuid().optional(),
    availability: z.literal('partner').optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers creating a partner automation' }),
    name: nameText(255),
    enabled: z.boolean().default(true),
    triggers: z.array(trigger).min(1).max(10),
    conditions: deviceFilter.optional().meta({ description: 'The filter language of dynamic groups, at fire time' }),
    actions: z.array(action).min(1).max(20),
    guards: guards.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.orgId && body.availability)
      ctx.addIssue({ code: 'custom', path: ['availability'], message: 'Give orgId or availability, not both' });
    if (!body.orgId && !body.availability)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
  });
export type CreateAutomation = z.output<typeof createAutomation>;

export const updateAutomation = atLeastOneField(
  z
    .object({
      name: nameText(255).optional(),
      enabled: z.boolean().optional(),
      triggers: z.array(trigger).min(1).max(10).optional(),
      conditions: deviceFilter.nullable().optional(),
      actions: z.array(action).min(1).max(20).optional(),
      guards: guards.optional(),
    })
    .strict(),
);
export type UpdateAutomation = z.output<typeof updateAutomation>;

const storedAction = z.record(z.string(), z.unknown());

export const automation = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['organization', 'partner']),
    name: z.string(),
    enabled: z.boolean(),
    version: z.number().int(),
    triggers: z.array(z.record(z.string(), z.unknown())),
    conditions: z.unknown().nullable(),
    actions: z.array(storedAction).meta({ description: 'Secret script parameters are named in secretParameters' }),
    guards: z.record(z.string(), z.unknown()),
    webhook: z
      .object({ url: z.string(), hasSecret: z.boolean() })
      .strict()
      .nullable()
      .meta({ description: 'For a webhook trigger: its URL (path) and whether a secret was issued' }),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'Automation' });
export const automationPage = pageOf(automation).meta({ id: 'AutomationPage' });

export const listQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: z.uuid().optional().meta({ description: "An organization's own automations, and its partner's" }),
});
export const automationParams = z.object({ id: z.uuid() });
export const runParams = z.object({ runId: z.uuid() });
export const pageOnly = z.object(pageQuery({ defaultLimit: 50, maxLimit: 200 }));

export const automationVersion = z
  .object({
    version: z.number().int(),
    name: z.string(),
    enabled: z.boolean(),
    triggers: z.array(z.record(z.string(), z.unknown())),
    conditions: z.unknown().nullable(),
    actions: z.array(storedAction),
    guards: z.record(z.string(), z.unknown()),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'AutomationVersion' });
export const versionPage = pageOf(automationVersion).meta({ id: 'AutomationVersionPage' });

/** Devices a manual run or dry run targets: named, a group's members, or (neither) every device in scope. */
export const targetBody = z
  .object({ deviceIds: ids(1000).optional(), groupId: z.uuid().optional() })
  .strict()
  .refine((body) => !(body.deviceIds && body.groupId), {
    message: 'Give deviceIds or groupId, not both',
    path: ['groupId'],
  });
export type TargetBody = z.output<typeof targetBody>;

export const itemStatuses = ['running', 'completed', 'failed', 'skipped', 'queued'] as const;

const actionOutcome = z
  .object({
    index: z.number().int(),
    type: z.string(),
    status: z.enum(['dispatched', 'running', 'completed', 'failed', 'skipped']),
    scriptRunId: z.uuid().optional(),
    scriptRunItemId: z.uuid().optional(),
    exitCode: z.number().int().nullable().optional(),
    durationMs: z.number().int().nullable().optional(),
    output: z.string().nullable().optional().meta({ description: 'The first 500 characters of its output' }),
    error: z.string().optional(),
  })
  .strict();

export const runItem = z
  .object({
    id: z.uuid(),
    deviceId: z.uuid(),
    hostname: z.string(),
    orgId: z.uuid(),
    status: z.enum(itemStatuses),
    skipReason: z.enum(['loop-guard', 'concurrency', 'maintenance']).nullable(),
    maintenanceWindowId: z.uuid().nullable(),
    actions: z.array(actionOutcome),
    scriptRunId: z.uuid().nullable().meta({ description: 'The script run its first run-script action started' }),
    scriptRunItemId: z.uuid().nullable().meta({ description: "That script run's item of this device" }),
    durationMs: z.number().int().nullable(),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'AutomationRunItem' });

const triggerReply = z
  .object({
    type: z.enum(['schedule', 'event', 'manual', 'webhook']),
    occurrenceKey: z.string(),
    event: z.string().optional(),
    eventId: z.string().optional(),
    timezone: z.string().optional(),
    occurrence: z.string().optional(),
  })
  .strict();

export const run = z
  .object({
    id: z.uuid(),
    automationId: z.uuid(),
    automationName: z.string(),
    automationVersion: z.number().int(),
    orgId: z.uuid(),
    trigger: triggerReply,
    status: z.enum(['running', 'completed', 'failed', 'skipped', 'partial', 'empty']),
    counts: z
      .object({
        running: z.number().int(),
        completed: z.number().int(),
        failed: z.number().int(),
        skipped: z.number().int(),
        queued: z.number().int(),
      })
      .strict(),
    createdAt: timestampReply,
    items: z.array(runItem).optional(),
  })
  .strict()
  .meta({ id: 'AutomationRun' });
export const runPage = pageOf(run).meta({ id: 'AutomationRunPage' });

export const runStarted = run
  .partial()
  .extend({
    automationId: z.uuid(),
    occurrenceKey: z.string(),
    duplicate: z.boolean().meta({ description: 'The occurrence had run already: nothing ran again' }),
    runs: z.array(run).meta({ description: 'One run per organization of the devices it ran on' }),
  })
  .strict()
  .meta({
    id: 'AutomationRunStarted',
    description: 'The first run (of a partner automation: of its first organization) and every run it started',
  });

export const dryRun = z
  .object({
    automationId: z.uuid(),
    at: timestampReply,
    nextOccurrences: z.array(
      z.object({ trigger: z.number().int(), timezone: z.string(), occurrence: occurrence.nullable() }).strict(),
    ),
    devices: z.array(
      z
        .object({
          deviceId: z.uuid(),
          hostname: z.string(),
          orgId: z.uuid(),
          timezone: z.string(),
          wouldRun: z.boolean(),
          skipReason: z.enum(['loop-guard', 'concurrency', 'maintenance']).nullable(),
          maintenanceWindowId: z.uuid().nullable(),
          actions: z.array(z.record(z.string(), z.unknown())),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'AutomationDryRun' });

export const occurrencesReply = z
  .object({
    automationId: z.uuid(),
    schedules: z.array(
      z
        .object({
          trigger: z.number().int().meta({ description: 'Index of the schedule trigger' }),
          timezone: z.string(),
          deviceLocal: z.boolean().meta({ description: "The schedule runs in each device's local time" }),
          deviceCount: z.number().int().nullable(),
          occurrences: z.array(occurrence),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'AutomationOccurrences' });

export const webhookSecret = z
  .object({
    automationId: z.uuid(),
    url: z.string(),
    secret: z.string().meta({ description: 'Shown once: sign calls with it' }),
    signing: z.string(),
  })
  .strict()
  .meta({ id: 'AutomationWebhookSecret' });

export const deviceAutomations = z
  .object({
    deviceId: z.uuid(),
    timezone: z.string(),
    automations: z.array(
      z
        .object({
          id: z.uuid(),
          name: z.string(),
          enabled: z.boolean(),
          availability: z.enum(['organization', 'partner']),
          origin: z.record(z.string(), z.unknown()),
          triggers: z.array(z.string()),
          nextOccurrence: occurrence.extend({ timezone: z.string() }).strict().nullable(),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'DeviceAutomations' });
