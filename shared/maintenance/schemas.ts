import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { atLeastOneField, nameText } from '../request-values.ts';
import { localDateTime, misfire, occurrence, rruleText, timezone } from '../schedules/schemas.ts';

export const suppressKinds = ['alerts', 'notifications', 'patching', 'automations', 'scripts'] as const;
export type SuppressKind = (typeof suppressKinds)[number];
const severities = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof severities)[number];

const ids = z
  .array(z.uuid())
  .max(500)
  .transform((list) => [...new Set(list)]);

const schedule = z
  .object({
    rrule: rruleText.optional().meta({ description: 'RFC 5545 RRULE without the RRULE: prefix; left out, a one-off' }),
    start: localDateTime.meta({ description: 'DTSTART: local date-time without offset, in timezone' }),
    timezone: timezone.optional().meta({
      description:
        "IANA zone; default: the zone of the first site named in targets, else of the organization's first site, else UTC",
    }),
    durationMinutes: z.number().int().min(1).max(43_200),
    exdates: z.array(localDateTime).max(500).optional().meta({ description: 'EXDATEs: local date-times left out' }),
    misfire: misfire.optional(),
  })
  .strict();

const targets = z
  .object({ orgIds: ids.optional(), siteIds: ids.optional(), groupIds: ids.optional(), deviceIds: ids.optional() })
  .strict()
  .refine((t) => Object.values(t).some((list) => list && list.length > 0), 'Name at least one target');
export type Targets = z.output<typeof targets>;

const suppress = z
  .array(z.enum(suppressKinds))
  .min(1)
  .transform((list) => [...new Set(list)])
  .meta({
    description:
      'alerts: still recorded, marked suppressedBy, not notified; notifications: not notified; patching, automations, scripts: those do not run',
  });

export const createWindow = z
  .object({
    orgId: z.uuid().optional(),
    availability: z.enum(['organization', 'partner']).optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only, for availability partner' }),
    name: nameText(255),
    schedule,
    targets,
    suppress,
    allowSeverity: z
      .enum(severities)
      .optional()
      .meta({ description: 'Alerts of this severity or above are still notified' }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.availability === 'partner' && body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner window names no organization' });
    if (body.availability !== 'partner' && !body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
  });
export type CreateWindow = z.output<typeof createWindow>;

export const updateWindow = atLeastOneField(
  z
    .object({
      name: nameText(255).optional(),
      schedule: schedule.optional(),
      targets: targets.optional(),
      suppress: suppress.optional(),
      allowSeverity: z.enum(severities).nullable().optional(),
    })
    .strict(),
);
export type UpdateWindow = z.output<typeof updateWindow>;

const active = z
  .object({
    occurrenceKey: z.string(),
    from: timestampReply,
    until: timestampReply,
    manual: z.boolean().meta({ description: 'Started by hand' }),
  })
  .strict();

export const window = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z.uuid().nullable(),
    availability: z.enum(['organization', 'partner']),
    name: z.string(),
    schedule: z
      .object({
        rrule: z.string().nullable(),
        start: z.string(),
        timezone: z.string(),
        durationMinutes: z.number().int(),
        exdates: z.array(z.string()),
        misfire: z.object({ policy: z.enum(['skip', 'run-once-late']), graceMinutes: z.number().int() }).strict(),
      })
      .strict(),
    targets: z
      .object({
        orgIds: z.array(z.uuid()).optional(),
        siteIds: z.array(z.uuid()).optional(),
        groupIds: z.array(z.uuid()).optional(),
        deviceIds: z.array(z.uuid()).optional(),
      })
      .strict(),
    suppress: z.array(z.enum(suppressKinds)),
    allowSeverity: z.enum(severities).nullable(),
    active: active.nullable().meta({ description: 'The occurrence in progress, when there is one' }),
    nextOccurrence: occurrence.nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'MaintenanceWindow' });
export const windowPage = pageOf(window).meta({ id: 'MaintenanceWindowPage' });
export const windowParams = z.object({ windowId: z.uuid() });
export const listQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: z.uuid().optional().meta({ description: "An organization's own windows, and its partner's" }),
});
export type ListQuery = z.output<typeof listQuery>;

export const startWindow = z
  .object({ minutes: z.number().int().min(1).max(43_200).meta({ description: 'How long, from now' }) })
  .strict();

export const occurrencesReply = z
  .object({
    windowId: z.uuid(),
    timezone: z.string(),
    durationMinutes: z.number().int(),
    occurrences: z.array(occurrence),
  })
  .strict()
  .meta({ id: 'MaintenanceOccurrences' });

export const deviceMaintenance = z
  .object({
    deviceId: z.uuid(),
    inMaintenance: z.boolean(),
    until: timestampReply.nullable().meta({ description: 'When the last window in progress ends' }),
    windows: z.array(
      z
        .object({
          id: z.uuid(),
          name: z.string(),
          from: timestampReply,
          until: timestampReply,
          manual: z.boolean(),
          suppress: z.array(z.enum(suppressKinds)),
          allowSeverity: z.enum(severities).nullable(),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'DeviceMaintenance' });
