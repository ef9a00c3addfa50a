import { z } from 'zod';
import { pageQuery, paginationSchema } from '../http/pagination.ts';
import { auditCategories } from './categories.ts';

export const actorTypes = ['user', 'api_key', 'agent', 'system', 'ai_agent'] as const;
export type ActorType = (typeof actorTypes)[number];
export const auditResults = ['success', 'failure', 'denied'] as const;
export type AuditResult = (typeof auditResults)[number];

/**
 * One audit event as writers hand it over (seed 2.2). Identifiers may be any text:
 * a non-UUID is stored as the zero UUID with the original kept in details (seed 2.2 rules 1-2).
 */
export const auditEvent = z.object({
  orgId: z.uuid().nullish(),
  timestamp: z.iso.datetime({ offset: true }).optional().meta({ description: 'When the action occurred; defaults to now (seed 2.2)' }),
  actorType: z.enum(actorTypes),
  actorId: z.string().min(1).max(255),
  actorEmail: z.string().max(255).nullish(),
  action: z.string().min(1).max(100),
  resourceType: z.string().max(50).nullish(),
  resourceId: z.string().min(1).max(255).nullish(),
  resourceName: z.string().max(255).nullish(),
  details: z.record(z.string(), z.unknown()).optional(),
  ipAddress: z.string().max(45).nullish(),
  userAgent: z.string().max(4096).nullish(),
  result: z.enum(auditResults).default('success'),
  errorMessage: z.string().max(10_000).nullish(),
});
export type AuditEvent = z.input<typeof auditEvent>;

/**
 * POST /api/v1/audit-logs/events (issue 3): events that other platform components own, validated by
 * the same schema; orgId is required, and lower-cased so batches sort (and lock) organizations alike.
 */
export const ingestedEvent = auditEvent.extend({ orgId: z.uuid().overwrite((id) => id.toLowerCase()) }).strict();
export const ingestEvents = z
  .object({ events: z.array(ingestedEvent).min(1).max(500).meta({ description: '1 to 500 events; one invalid event rejects the request and stores nothing' }) })
  .strict();
export const ingestReceipt = z
  .object({ received: z.number().int(), ids: z.array(z.uuid()).meta({ description: 'Ids of the stored rows, in request order' }) })
  .meta({ id: 'AuditIngestReceipt' });
/** Idempotency-Key header: a retry within 24 hours gets the first reply and writes nothing. */
export const idempotencyKey = z.string().regex(/^[\x20-\x7e]{1,255}$/, 'Give 1 to 255 printable ASCII characters');

// Reading the trail (seed 4.1, issue 3 "Endpoints"): one filter schema for every list, search, export and report route.

/** ISO 8601 with an offset, within what PostgreSQL reads (year 0001 and later, offsets up to ±15:59). */
const instant = z.iso
  .datetime({ offset: true })
  .refine((v) => !v.startsWith('0000') && !/[+-](1[6-9]|2\d):\d\d$/.test(v), 'Give a year from 0001 and an offset within ±15:59');
/** An empty filter (`?user=`, as viewers send them) is no filter. */
const filterText = (description: string) =>
  z.preprocess((v) => (v === '' ? undefined : v), z.string().max(255).optional()).meta({ description: `${description}; LIKE wildcards match literally` });

export const auditFilterFields = {
  user: filterText('Case-insensitive substring of the actor e-mail or the actor name'),
  action: filterText('Case-insensitive substring of the action'),
  resource: filterText('Case-insensitive substring of the resource type or the resource name'),
  from: instant.optional().meta({ description: 'Rows at or after this instant (ISO 8601 with offset)' }),
  to: instant.optional().meta({ description: 'Rows at or before this instant (ISO 8601 with offset)' }),
  orgId: z.uuid().optional().meta({
    description: "Only this organization's rows. Partner users: one of their organizations (soft-deleted ones included); another tenant's gives an empty result",
  }),
};
const listFields = {
  ...pageQuery({ defaultLimit: 50, maxLimit: 100 }),
  ...auditFilterFields,
  skipCount: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((value) => value === 'true' || value === '1')
    .meta({
      description:
        'true or 1: no count(*) over the filtered set; pagination.total is then what is known (rows up to this page, plus 1 when more exist) and pagination.hasMore says whether a next page exists',
    }),
};
export const auditListQuery = z.object(listFields);
export const auditSearchQuery = z.object({
  ...listFields,
  q: z.string().min(1).max(255).meta({ description: 'Required: case-insensitive substring of action, actor e-mail, resource type, resource name or details (as text)' }),
});
export const auditExportQuery = z.object({
  ...auditFilterFields,
  q: filterText('As q of /audit-logs/search: action, actor e-mail, resource type, resource name or details (as text)'),
  format: z.enum(['csv', 'json']).default('json'),
});
export const auditReportQuery = z.object(auditFilterFields);
export const auditVerifyQuery = z.object({
  from: auditFilterFields.from,
  to: auditFilterFields.to,
  orgId: z.uuid().optional().meta({ description: "The organization whose chain to verify: required for partner and platform users; organization users verify their own" }),
});
export const auditIdParams = z.object({ id: z.uuid() });

export const auditPagination = paginationSchema
  .extend({ hasMore: z.boolean().optional().meta({ description: 'Only with skipCount=true: whether a next page exists' }) })
  .meta({ id: 'AuditPagination', description: 'With skipCount=true, total = rows up to this page (+1 when more exist) and totalPages follows from it' });

const timestamp = z.string().meta({ description: 'ISO 8601, UTC, microseconds: YYYY-MM-DDTHH:MM:SS.ffffffZ' });
const categoryField = z.enum(auditCategories).meta({ description: 'seed 2.3, by action prefix' });
/** What both formats add to seed 4.1 for the viewer. */
const viewerAdditions = {
  orgId: z.uuid(),
  seq: z.number().int().meta({ description: "Position in the organization's hash chain" }),
  actorType: z.enum(actorTypes),
  actorHostname: z.string().nullable().meta({ description: "For actorType agent: the hostname of the agent's device" }),
  category: categoryField,
  result: z.enum(auditResults),
};

/** seed 4.1.1: the flattened entry of the viewer component. */
export const auditViewerEntry = z
  .object({
    id: z.uuid(),
    timestamp,
    action: z.string(),
    resource: z.string().meta({ description: "The resource name; '' when none" }),
    resourceType: z.string().meta({ description: "'' when none" }),
    details: z.string().meta({ description: 'details serialized as JSON' }),
    ipAddress: z.string().meta({ description: "'' when unknown" }),
    userAgent: z.string().meta({ description: "'' when unknown" }),
    sessionId: z.string().nullable().meta({ description: 'details.sessionId when it is a string' }),
    user: z
      .object({ name: z.string(), email: z.string(), role: z.string(), department: z.string() })
      .meta({ description: "The actor: name, role and department as recorded in details.actor, e-mail as actorEmail; '' when unknown" }),
    changes: z
      .object({ before: z.record(z.string(), z.unknown()), after: z.record(z.string(), z.unknown()) })
      .meta({ description: 'details.before/after (or details.changes.before/after); {} when absent' }),
    ...viewerAdditions,
  })
  .meta({ id: 'AuditViewerEntry' });
export const auditViewerPage = z.object({ entries: z.array(auditViewerEntry), pagination: auditPagination });

/** seed 4.1.2: the detailed entry. */
export const auditDetailedEntry = z
  .object({
    id: z.uuid(),
    timestamp,
    user: z
      .object({ id: z.uuid(), name: z.string(), email: z.string(), role: z.string() })
      .meta({ description: "The actor: id and e-mail as stored, name and role as recorded in details.actor; '' when unknown" }),
    action: z.string(),
    resource: z.object({ type: z.string(), id: z.uuid().nullable(), name: z.string() }).meta({ description: "'' (id: null) when the row names no resource" }),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    errorMessage: z.string().nullable(),
    ...viewerAdditions,
  })
  .meta({ id: 'AuditEntry' });
export const auditDetailedPage = z.object({ data: z.array(auditDetailedEntry), pagination: auditPagination });
export const auditCompliancePage = auditDetailedPage.extend({
  counts: z.record(z.string(), z.number().int()).meta({ description: 'Rows per compliance-tracked action over the filters (every action listed, 0 included)' }),
});
export const auditSummary = z
  .object({
    total: z.number().int(),
    byCategory: z.record(z.enum(auditCategories), z.number().int()),
    byResult: z.record(z.enum(auditResults), z.number().int()),
    byActorType: z.record(z.enum(actorTypes), z.number().int()),
  })
  .meta({ id: 'AuditSummary', description: 'Row counts over from/to and the filters; every key listed, 0 included' });

/** An exported row: the canonical values of the chain (DESIGN.md "Audit chain"), enough to verify an export offline. */
export const auditExportRow = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    seq: z.number().int(),
    timestamp,
    actorType: z.enum(actorTypes),
    actorId: z.uuid(),
    actorEmail: z.string().nullable(),
    action: z.string(),
    resourceType: z.string().nullable(),
    resourceId: z.uuid().nullable(),
    resourceName: z.string().nullable(),
    details: z.string().meta({ description: "PostgreSQL's jsonb text of details, as the checksum covers it" }),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    result: z.enum(auditResults),
    errorMessage: z.string().nullable(),
    prevChecksum: z.string().nullable(),
    checksum: z.string(),
  })
  .meta({ id: 'AuditExportRow' });
export const auditExport = z
  .object({ exportedAt: z.iso.datetime(), filters: z.record(z.string(), z.unknown()), rows: z.array(auditExportRow) })
  .meta({
    id: 'AuditExport',
    description:
      'format=json. format=csv answers text/csv with the same columns as rows (header row; CRLF; RFC 4180 quoting; a null is an empty cell, an empty string ""; a cell starting with = + - @ tab CR or \' gets a leading \')',
  });
export const auditVerification = z
  .object({
    ok: z.boolean(),
    checked: z.number().int().meta({ description: 'Rows whose checksum was recomputed' }),
    firstBreak: z.object({ seq: z.number().int(), id: z.uuid().nullable(), kind: z.enum(['altered', 'missing', 'inserted', 'link']) }).optional(),
  })
  .meta({ id: 'AuditVerification' });
