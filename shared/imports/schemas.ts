import { z } from 'zod';

/**
 * What every preview → commit import shares (DESIGN.md "Layout"): the annotation of each row, the outcome commit
 * gave it, the acknowledgement a caller echoes for a held row, and the reply's shape.
 */
export const annotations = [
  'create',
  'update',
  'unchanged',
  // A row whose record is linked by externalId and would change nothing (issue 18's tree import).
  'matched',
  'email-match',
  'name-match',
  'conflict',
  'invalid',
] as const;
export type Annotation = (typeof annotations)[number];

/** Fuzzy matches (seed 2.1 rule 2): applied only for rows whose acknowledgement the caller echoes. */
export const heldAnnotations: readonly Annotation[] = ['email-match', 'name-match'];

export const outcomes = ['created', 'updated', 'unchanged', 'held', 'refused'] as const;
export type Outcome = (typeof outcomes)[number];

/** What the caller saw at preview, echoed at commit: a row whose annotation has changed since is refused. */
export const importRowAcknowledgement = z
  .object({ annotation: z.enum(annotations) })
  .strict()
  .meta({ description: "The row's annotation at preview; commit refuses the row when it has changed since" });

const issue = z.object({ path: z.string(), message: z.string() });

const importRow = z.object({
  row: z.number().int().meta({ description: 'Index of the row in the request, from 0' }),
  externalId: z.string().optional().meta({ description: 'The externalId the row was given, if any' }),
  annotation: z.enum(annotations),
  outcome: z.enum(outcomes).meta({ description: 'At preview: what commit would do without acknowledgements' }),
  reason: z.string().optional(),
  issues: z.array(issue).optional().meta({ description: 'Why an invalid row is invalid, field by field' }),
});

export const importSummary = z.object({
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  held: z.number().int(),
  refused: z.number().int(),
});

/** The reply of an import's preview and commit, with the domain's own fields on each row. */
export const importReply = <E extends z.ZodRawShape>(extra: z.ZodObject<E>) =>
  z.object({
    committed: z.boolean().meta({ description: 'false for a preview: nothing was stored' }),
    summary: importSummary,
    rows: z.array(importRow.extend(extra.shape)),
  });
