import { z } from 'zod';
import { pageQuery, paginationSchema } from '../db/paging.ts';
import { asUtc, filterInstantPattern, instant } from '../instants.ts';
import { optionalParam } from '../request-values.ts';
import { auditAnchor } from './anchor-schemas.ts';
import { auditCategories } from './categories.ts';
import { chainBreakKinds } from './chain-break.ts';
import { checkpointVersion } from './signed-versions.ts';

export const actorTypes = ['user', 'api_key', 'agent', 'system', 'ai_agent'] as const;
export type ActorType = (typeof actorTypes)[number];
export const auditResults = ['success', 'failure', 'denied'] as const;
export type AuditResult = (typeof auditResults)[number];

const earliestInstant = Date.parse('0001-01-01T00:00:00Z');
const endOfInstants = Date.UTC(10_000, 0, 1);
/** Only checked once the value is an ISO 8601 date-time, so a malformed value gets one issue. */
const whenWellFormed = { when: (payload: { issues: readonly unknown[] }) => payload.issues.length === 0 };

/** ISO 8601 with an offset, within what audit_logs stores: also once converted to UTC a year from 0001 to 9999 (its CHECK). */
export const strictInstant = instant().refine(
  (value) => {
    const at = Date.parse(value);
    return at >= earliestInstant && at < endOfInstants;
  },
  { message: 'Give an instant from year 0001 to 9999, also in UTC', ...whenWellFormed },
);

/**
 * One audit event as writers hand it over. Identifiers may be any text:
 * a non-UUID is stored as the zero UUID with the original kept in details.
 */
export const auditEvent = z.object({
  orgId: z.uuid().nullish(),
  timestamp: strictInstant.optional().meta({ description: 'When the action occurred; defaults to now' }),
  actorType: z.enum(actorTypes),
  actorId: z.string().min(1).max(255),
  actorEmail: z.string().max(255).nullish(),
  action: z.string().min(1).max(100),
  resourceType: z.string().max(50).nullish(),
  resourceId: z.string().min(1).max(255).nullish(),
  resourceName: z.string().max(255).nullish(),
  details: z.record(z.string(), z.unknown()).optional(),
  ipAddress: z.string().max(255).nullish().meta({
    description: 'An IPv4 or IPv6 address; any other value is stored as null, the original in details.rawIpAddress',
  }),
  userAgent: z.string().max(4096).nullish(),
  result: z.enum(auditResults).default('success'),
  errorMessage: z.string().max(10_000).nullish(),
});
export type AuditEvent = z.input<typeof auditEvent>;

/**
 * The actions other platform components own and may report: the service emits every other action of
 * the trail itself (device.*, data.*, organization.*, agent.*), and a reported one would be indistinguishable from it.
 */
export const reportableActions = [
  'user.login',
  'user.login.failed',
  'user.logout',
  'user.permission.change',
  'policy.*',
  'alert.*',
  'script.execute',
  'automation.policy.evaluate',
] as const;
const isReportable = (action: string) =>
  reportableActions.some((allowed) =>
    allowed.endsWith('.*')
      ? action.startsWith(allowed.slice(0, -1)) && action.length > allowed.length - 1
      : action === allowed,
  );
/** How far ahead of the server's clock a reported timestamp may lie (clock skew), not more. */
export const maxFutureSkewMs = 10 * 60 * 1000;

/**
 * POST /api/v1/audit-logs/events: events that other platform components own, validated by
 * the same schema; orgId is required, and lower-cased so batches sort (and lock) organizations alike.
 */
export const ingestedEvent = auditEvent
  .extend({
    orgId: z.uuid().overwrite((id) => id.toLowerCase()),
    action: z
      .string()
      .max(100)
      .refine(
        isReportable,
        `Give one of ${reportableActions.join(', ')}; actions the service emits itself cannot be reported`,
      )
      .meta({ description: `One of ${reportableActions.join(', ')} (a * stands for any rest)` }),
    timestamp: strictInstant
      .refine((value) => Date.parse(value) <= Date.now() + maxFutureSkewMs, {
        message: 'A timestamp may lie at most 10 minutes in the future',
        ...whenWellFormed,
      })
      .optional()
      .meta({
        description:
          'When the action occurred (ISO 8601 with offset, at most 10 minutes ahead of the server); defaults to now',
      }),
  })
  .strict();
export const ingestEvents = z
  .object({
    events: z
      .array(ingestedEvent)
      .min(1)
      .max(500)
      .meta({ description: '1 to 500 events; one invalid event rejects the request and stores nothing' }),
  })
  .strict();
export const ingestReceipt = z
  .object({
    received: z.number().int(),
    ids: z.array(z.uuid()).meta({ description: 'Ids of the stored rows, in request order' }),
  })
  .meta({ id: 'AuditIngestReceipt' });
/** Idempotency-Key header: a retry within 24 hours gets the first reply and writes nothing. */

// Reading the trail: one filter schema for every list, search, export and report route.

/**
 * A from/to filter: ISO 8601 with an offset (Z, +01:00 or +0100), or without one as UTC; a date alone is the
 * start of that UTC day for `from` and its end (23:59:59.999999) for `to`, so from=2026-01-01&to=2026-01-31
 * is all of January; empty, no bound (as ?until= of the log lists). Normalized to ISO 8601 with an offset, then
 * held to the range of strictInstant.
 */
const filterInstant = (bound: 'from' | 'to') =>
  optionalParam(
    z
      .string()
      .regex(
        filterInstantPattern,
        'Give an ISO 8601 date, or date and time (a year from 0001, an offset within ±14:00)',
      )
      .transform((value) => {
        if (!value.includes('T')) return `${value}T${bound === 'from' ? '00:00:00' : '23:59:59.999999'}Z`;
        return asUtc(value).replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
      })
      .pipe(strictInstant),
  );
/** An empty filter (`?user=`, as viewers send them) is no filter. */
const filterText = (description: string) =>
  z
    .preprocess((v) => (v === '' ? undefined : v), z.string().max(255).optional())
    .meta({ description: `${description}; LIKE wildcards match literally` });

export const auditFilterFields = {
  user: filterText('Case-insensitive substring of the actor e-mail or the actor name'),
  action: filterText('Case-insensitive substring of the action'),
  resource: filterText('Case-insensitive substring of the resource type or the resource name'),
  from: filterInstant('from').meta({
    description:
      'Rows at or after this instant: ISO 8601 with an offset (Z, +01:00, +0100), without one as UTC, or a date (from the start of that UTC day); empty: no bound',
  }),
  to: filterInstant('to').meta({
    description:
      'Rows at or before this instant: ISO 8601 with an offset (Z, +01:00, +0100), without one as UTC, or a date (to the end of that UTC day); empty: no bound',
  }),
  orgId: z.uuid().optional().meta({
    description:
      "Only this organization's rows. Partner users: one of their organizations (soft-deleted ones included); another tenant's gives an empty result",
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
        'true or 1: nothing is counted; pagination.total is then a lower bound, the rows known to exist (rows up to this page, plus 1 when more exist; 0 for an empty page past the first, which proves nothing), exact on the last page (pagination.totalExact)',
    }),
};
export const auditListQuery = z.object(listFields);
export const auditSearchQuery = z.object({
  ...listFields,
  q: z.string().min(1).max(255).meta({
    description:
      'Required: case-insensitive substring of action, actor e-mail, resource type, resource name or details (as text)',
  }),
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
  orgId: z.uuid().optional().meta({
    description:
      'The organization whose chain to verify: required for partner and platform users; organization users verify their own',
  }),
});
export const auditIdParams = z.object({ id: z.uuid() });

export const auditPagination = paginationSchema
  .extend({
    hasMore: z.boolean().meta({ description: 'Whether a next page exists' }),
    totalExact: z.boolean().meta({
      description:
        'Whether total is the number of rows in scope; false: total is a lower bound (a filtered count that reached 1,000, or skipCount=true before the last page)',
    }),
  })
  .meta({
    id: 'AuditPagination',
    description:
      'Without filters, total is exact at any size. A filtered set is counted up to 1,000 rows: at 1,000 (totalExact false) there are at least that many; the summary report counts any number. With skipCount=true nothing is counted and total is what the rows prove: the rows up to this page (+1 when more exist), or 0 when a page past the first is empty; totalPages follows from total',
  });

const timestamp = z.string().meta({ description: 'ISO 8601, UTC, microseconds: YYYY-MM-DDTHH:MM:SS.ffffffZ' });
/** An id as audit_logs holds it: any UUID (hex 8-4-4-4-12, any version or variant), as a reporter gave it or a forged row carries it. */
const storedId = z.guid();
const categoryField = z
  .enum(auditCategories)
  .meta({ description: 'Derived from the action prefix (docs/audit.md "Categories")' });
/** What both formats add for the viewer. */
const viewerAdditions = {
  orgId: z.uuid(),
  seq: z.number().int().meta({ description: "Position in the organization's hash chain" }),
  actorType: z.enum(actorTypes),
  actorHostname: z.string().nullable().meta({ description: "For actorType agent: the hostname of the agent's device" }),
  category: categoryField,
  result: z.enum(auditResults),
};

/** The flattened entry of the viewer component. */
export const auditViewerEntry = z
  .object({
    id: storedId,
    timestamp,
    action: z.string(),
    resource: z.string().meta({ description: "The resource name; '' when none" }),
    resourceType: z.string().meta({ description: "'' when none" }),
    details: z.string().meta({ description: 'details serialized as JSON' }),
    ipAddress: z.string().meta({ description: "'' when unknown" }),
    userAgent: z.string().meta({ description: "'' when unknown" }),
    sessionId: z.string().nullable().meta({ description: 'details.sessionId when it is a string' }),
    user: z.object({ name: z.string(), email: z.string(), role: z.string(), department: z.string() }).meta({
      description:
        "The actor: name, role and department as recorded in details.actor, e-mail as actorEmail; '' when unknown",
    }),
    changes: z
      .object({ before: z.record(z.string(), z.unknown()), after: z.record(z.string(), z.unknown()) })
      .meta({ description: 'details.before/after (or details.changes.before/after); {} when absent' }),
    ...viewerAdditions,
  })
  .meta({ id: 'AuditViewerEntry' });
export const auditViewerPage = z.object({ entries: z.array(auditViewerEntry), pagination: auditPagination });

/** The detailed entry. */
export const auditDetailedEntry = z
  .object({
    id: storedId,
    timestamp,
    user: z.object({ id: storedId, name: z.string(), email: z.string(), role: z.string() }).meta({
      description: "The actor: id and e-mail as stored, name and role as recorded in details.actor; '' when unknown",
    }),
    action: z.string(),
    resource: z
      .object({ type: z.string(), id: storedId.nullable(), name: z.string() })
      .meta({ description: "'' (id: null) when the row names no resource" }),
    ipAddress: z.string().nullable(),
    userAgent: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
    errorMessage: z.string().nullable(),
    ...viewerAdditions,
  })
  .meta({ id: 'AuditEntry' });
export const auditDetailedPage = z.object({ data: z.array(auditDetailedEntry), pagination: auditPagination });
export const auditCompliancePage = auditDetailedPage.extend({
  counts: z
    .record(z.string(), z.number().int())
    .meta({ description: 'Rows per compliance-tracked action over the filters (every action listed, 0 included)' }),
});
/** A count per value, every value a named property (a record over an enum documents its keys as required but not as properties). */
const countsOf = <const T extends readonly string[]>(values: T) =>
  z.object(Object.fromEntries(values.map((value) => [value, z.number().int()])) as Record<T[number], z.ZodNumber>);
export const auditSummary = z
  .object({
    total: z.number().int(),
    byCategory: countsOf(auditCategories),
    byResult: countsOf(auditResults),
    byActorType: countsOf(actorTypes),
  })
  .meta({ id: 'AuditSummary', description: 'Row counts over from/to and the filters; every key listed, 0 included' });

/** An exported row: the canonical values of the chain (docs/audit.md), enough to verify an export offline. */
export const auditExportRow = z
  .object({
    id: storedId,
    orgId: z.uuid(),
    seq: z.number().int(),
    timestamp,
    actorType: z.enum(actorTypes),
    actorId: storedId,
    actorEmail: z.string().nullable(),
    action: z.string(),
    resourceType: z.string().nullable(),
    resourceId: storedId.nullable(),
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
/** A position of an organization's chain: its seq and that row's checksum. */
const chainHead = z
  .object({ seq: z.number().int(), checksum: z.string() })
  .meta({ id: 'AuditChainHead', description: "An organization's last sealed row: its seq and checksum" });
const checkpointRecord = z
  .object({
    seq: z.number().int().meta({ description: 'The last row the retention cut deleted' }),
    checksum: z.string(),
    signed: z
      .object({
        lastTimestamp: z.string().meta({ description: "The last deleted row's timestamp (canonical, microseconds)" }),
        retentionDays: z.number().int(),
        asOf: z.string().meta({ description: 'The instant the policy window was evaluated at' }),
        anchored: z.boolean().meta({ description: 'Whether the organization had been anchored at the cut' }),
        keyId: z.string(),
        signature: z.string().meta({
          description: `Ed25519 signature (base64) of '${checkpointVersion}', then per field (orgId, seq, checksum, lastTimestamp, retentionDays, asOf, anchored, keyId) a newline and '<UTF-8 byte length>:<value>'`,
        }),
      })
      .nullable()
      .meta({
        description: "The retention worker's signature of the cut; null: unsigned, which every verifier refuses",
      }),
  })
  .meta({ id: 'AuditChainCheckpoint' });
export const auditChainEvidence = z
  .object({
    checkpoint: checkpointRecord
      .nullable()
      .meta({ description: 'The latest retention cut: the chain starts after it' }),
    anchor: auditAnchor.nullable().meta({ description: 'The newest signed anchor' }),
    anchoredRecordSeq: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'Where the chain records that the organization was anchored (system.audit.anchored)' }),
  })
  .meta({ id: 'AuditChainEvidence' });
export const auditExport = z
  .object({
    exportedAt: z.iso.datetime(),
    filters: z.record(z.string(), z.unknown()),
    heads: z.record(z.uuid(), chainHead).meta({
      description:
        "The chain head of each organization with rows in the file, read in the export's snapshot. The file's rows verify on their own " +
        '(npm run audit:verify -- --file), but so would rows forged with their checksums: compare these heads with the live ones ' +
        '(GET /audit-logs/verify) or with copies kept elsewhere',
    }),
    publicKey: z.string().nullable().meta({
      description: 'The Ed25519 public key (SPKI PEM) anchors and checkpoints are signed with; null: none configured',
    }),
    evidence: z.record(z.uuid(), auditChainEvidence).meta({
      description:
        "Per organization in the file, read in the export's snapshot: the signed evidence the offline check applies like GET /audit-logs/verify",
    }),
    rows: z.array(auditExportRow),
  })
  .meta({
    id: 'AuditExport',
    description:
      'format=json. format=csv answers text/csv with the same columns as rows (header row; CRLF; RFC 4180 quoting; a null is an empty cell, an empty string ""; a cell starting with = + - @ tab CR or \' gets a leading \')',
  });
export const auditVerification = z
  .object({
    ok: z.boolean(),
    checked: z.number().int().meta({ description: 'Rows whose checksum was recomputed' }),
    firstBreak: z
      .object({
        seq: z.number().int(),
        id: storedId.nullable(),
        kind: z.enum(chainBreakKinds).meta({
          description:
            'altered, missing, inserted, link: the chain rules; checkpoint: the retention checkpoint the chain starts after is unsigned, ' +
            'signed with another key, or cut rows younger than its policy allowed; anchor: the chain no longer holds its newest signed anchor, ' +
            'or anchors recorded as written were deleted',
        }),
        meaning: z.string().meta({ description: 'What the kind means, in the words of every verifier' }),
      })
      .optional(),
    head: chainHead.nullable().meta({
      description:
        "The organization's chain head (its last sealed row), read in the snapshot that was verified; null when the organization has no rows. " +
        'Whoever can rewrite the database can also recompute every checksum and this head: keep it outside the database and compare it later',
    }),
    anchor: z
      .object({ seq: z.number().int(), ok: z.boolean() })
      .optional()
      .meta({
        description:
          "Present when the organization has a signed anchor (GET /audit-logs/anchors): whether the chain still holds the newest one's row at its seq, " +
          'its head and boundary not moved back (and, with the key configured, its signature valid). A failure makes ok false',
      }),
  })
  .meta({ id: 'AuditVerification' });

// What a reader of the trail receives (the viewer's types: web/src imports them as types only).
export type AuditPagination = z.output<typeof auditPagination>;
export type AuditViewerEntry = z.output<typeof auditViewerEntry>;
export type AuditViewerPage = z.output<typeof auditViewerPage>;
export type AuditDetailedEntry = z.output<typeof auditDetailedEntry>;
export type AuditDetailedPage = z.output<typeof auditDetailedPage>;
export type AuditVerification = z.output<typeof auditVerification>;
