import { z } from 'zod';

/**
 * What every preview → commit import of rows shares (docs/imports.md): the annotation of each row, the outcome
 * commit gives it (or would give it, at preview), the acknowledgement a caller echoes, and the reply's shape.
 */
export const annotations = [
  'create',
  'update',
  'unchanged',
  'email-match',
  'name-match',
  'conflict',
  'invalid',
] as const;
export type Annotation = (typeof annotations)[number];

/** Fuzzy matches: held, applied only for rows whose acknowledgement the caller echoes. */
export const heldAnnotations: readonly Annotation[] = ['email-match', 'name-match'];

/** The same words at preview (what commit would do) and at commit (what it did): a preview never says created. */
export const outcomes = ['create', 'update', 'unchanged', 'held', 'refused'] as const;
export type Outcome = (typeof outcomes)[number];

/** Data rows are numbered from 1, the CSV header not counted; JSON rows by their place in `rows`, from 1. */
export const rowNumber = z
  .number()
  .int()
  .min(1)
  .meta({ description: 'The data row, from 1 (a CSV header not counted)' });

/** What the caller saw at preview, echoed at commit: a row whose annotation has changed since is refused. */
export const importRowAcknowledgement = z
  .object({ annotation: z.enum(annotations) })
  .strict()
  .meta({ description: "The row's annotation at preview; commit refuses the row when it has changed since" });

const issue = z.object({ path: z.string(), message: z.string() });

export const importRow = z.object({
  row: rowNumber,
  externalId: z.string().optional().meta({ description: 'The externalId the row was given, if any' }),
  annotation: z.enum(annotations),
  outcome: z
    .enum(outcomes)
    .meta({ description: 'At preview: what commit would do without acknowledgements; at commit: what it did' }),
  reason: z.string().optional(),
  issues: z.array(issue).optional().meta({ description: 'Why an invalid row is invalid, field by field' }),
});

export const importSummary = z
  .object(Object.fromEntries(outcomes.map((outcome) => [outcome, z.number().int()])) as Record<Outcome, z.ZodNumber>)
  .meta({ description: 'How many rows have each outcome' });

/** The reply of an import's preview and commit, with the domain's own fields on each row. */
export const importReply = <E extends z.ZodRawShape>(extra: z.ZodObject<E>) =>
  z.object({
    committed: z.boolean().meta({ description: 'false for a preview: nothing was stored' }),
    summary: importSummary,
    rows: z.array(importRow.extend(extra.shape)),
  });
