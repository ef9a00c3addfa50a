import { z } from 'zod';
import { importReply } from '../imports/schemas.ts';
import { actorTypes, auditResults, maxFutureSkewMs, strictInstant } from './schemas.ts';

/** Rows one request of the history import takes (JSON rows or CSV data rows). */
export const maxHistoryRows = 5_000;

/**
 * What one row's JSON may take (UTF-8 bytes): stored, each row travels in a statement of the Data API's 4 MiB request,
 * where each quote and backslash takes two bytes, beside what the import adds to it.
 */
export const maxHistoryRowBytes = 1024 * 1024;

/** Printable text: no control, format or unassigned characters. */
const printable = /^[^\p{C}]+$/u;

/** The trail's own evidence events (retention cuts, anchors, chain checks) live here: an import never claims them. */
const isSystemAction = (action: string) => action.toLowerCase().startsWith('system.');

/**
 * One row of another system's audit history, as JSON or as a CSV row (`details` then a JSON text). Each row is
 * checked on its own: a row that does not check is `invalid` with its issues, never a 400 for the request.
 */
export const historyRow = z
  .object({
    externalId: z.string().min(1).max(255).meta({ description: "The row's id in the system it comes from" }),
    timestamp: strictInstant
      .refine((value) => Date.parse(value) <= Date.now() + maxFutureSkewMs, {
        message: 'A timestamp may lie at most 10 minutes in the future',
        when: (payload) => payload.issues.length === 0,
      })
      .meta({
        description:
          "When it happened: ISO 8601 with an offset, at most 10 minutes ahead, not older than the organization's audit retention",
      }),
    action: z
      .string()
      .min(1)
      .max(100)
      .regex(printable, 'Give printable characters only')
      .refine(
        (action) => !isSystemAction(action),
        "system. actions are the trail's own records; they cannot be imported",
      )
      .meta({ description: '1-100 printable characters, not starting with system.' }),
    actorType: z.enum(actorTypes).default('user'),
    actorId: z.string().min(1).max(255).optional().meta({ description: "The actor's id in the system it comes from" }),
    actorEmail: z.string().max(255).optional(),
    actorName: z.string().max(255).optional(),
    resourceType: z.string().max(50).optional(),
    resourceId: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .meta({ description: "The resource's id in the system it comes from (kept in details.imported)" }),
    resourceName: z.string().max(255).optional(),
    details: z.record(z.string(), z.unknown()).optional(),
    ipAddress: z.string().max(45).optional(),
    userAgent: z.string().max(1000).optional(),
    result: z.enum(auditResults).default('success'),
    errorMessage: z.string().max(2000).optional(),
  })
  .strict();
export type HistoryRow = z.output<typeof historyRow>;

/** The fields of a row, also the CSV columns read (headers compared loosely). */
export const historyFields = Object.keys(historyRow.shape) as (keyof typeof historyRow.shape)[];

/** A CSV row: the same fields, `details` written as a JSON object's text. */
export const historyCsvRow = historyRow.extend({
  details: z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: 'custom', message: 'Give a JSON object' });
        return z.NEVER;
      }
    })
    .pipe(z.record(z.string(), z.unknown(), { error: 'Give a JSON object' }))
    .optional(),
});

/** POST /api/v1/audit-logs/import and …/import/preview. */
export const historyImport = z
  .object({
    orgId: z.uuid().optional().meta({
      description:
        "The organization imported into; partner and platform callers name it, an organization's own by default",
    }),
    sourceSystem: z.string().trim().min(1).max(50).meta({
      description: 'The system the history comes from (e.g. datto, ninjaone): externalIds are unique within it',
    }),
    rows: z
      .array(z.record(z.string(), z.unknown()))
      .min(1)
      .max(maxHistoryRows)
      .optional()
      .meta({ description: `1 to ${maxHistoryRows.toLocaleString('en')} rows` }),
    csv: z
      .string()
      .min(1)
      .optional()
      .meta({
        description: `RFC 4180 CSV with a header row and up to ${maxHistoryRows.toLocaleString('en')} data rows; details as JSON text`,
      }),
  })
  .strict()
  .refine((body) => (body.rows === undefined) !== (body.csv === undefined), {
    message: 'Give either rows or csv',
    path: ['rows'],
  });
export type HistoryImport = z.output<typeof historyImport>;

export const historyImportReply = importReply(
  z.object({
    entryId: z.uuid().optional().meta({ description: 'At commit, the audit entry a created row became' }),
  }),
)
  .extend({
    waiting: z.boolean().meta({
      description:
        'Whether imported rows of the organization still wait in the history lane to be moved into the searchable trail (they are read and searched already)',
    }),
  })
  .meta({ id: 'AuditHistoryImport' });
