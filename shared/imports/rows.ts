import type { z } from 'zod';
import { type Annotation, heldAnnotations, type Outcome, outcomes } from './schemas.ts';

/** One row as an import derived it from the request and the stored records. */
export interface DerivedRow {
  /** The data row, from 1 (a CSV header not counted). */
  row: number;
  externalId?: string;
  annotation: Annotation;
  reason?: string;
  issues?: { path: string; message: string }[];
  /** The stored record the row updates, leaves unchanged or matches fuzzily. */
  targetId?: string;
}

/** What commit does with a row: create a record, update its target (also a held row's link), or nothing. */
export type Apply = 'create' | 'update' | null;

export interface Decision {
  apply: Apply;
  outcome: Outcome;
  reason?: string;
}

export const isHeld = (annotation: Annotation) => heldAnnotations.includes(annotation);

/** The report row numbers given rows from 1: the `index` of a row in the request, from 0, as the report's row. */
export const rowNumberOf = (index: number) => index + 1;

/** The externalId a row was given, echoed in its report even when the row does not check. */
export const givenExternalId = (raw: Record<string, unknown>) =>
  typeof raw.externalId === 'string' && raw.externalId.trim() ? raw.externalId.trim() : undefined;

/** The zod issues of a row that does not check, as its report lists them. */
export const rowIssues = (error: z.ZodError) =>
  error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));

/** An `invalid` row: the reason, and the fields at fault. */
export const invalidRow = (row: number, issues: { path: string; message: string }[], externalId?: string | null) =>
  ({
    row,
    ...(externalId ? { externalId } : {}),
    annotation: 'invalid',
    reason: 'The row does not check',
    issues,
  }) satisfies DerivedRow;

/** The one key every import matches a row on: the (sourceSystem, externalId) pair. */
export const matchKey = (row: { sourceSystem?: string | null; externalId?: string | null }) =>
  JSON.stringify([row.sourceSystem ?? null, row.externalId ?? null]);

/** The keys that more than one row of the request carries: such rows are a `conflict`, never a guess. */
export function repeatedKeys(rows: readonly { sourceSystem?: string | null; externalId?: string | null }[]) {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const row of rows) {
    if (!row.externalId) continue;
    const key = matchKey(row);
    if (seen.has(key)) repeated.add(key);
    seen.add(key);
  }
  return repeated;
}

/** Stored records by their (sourceSystem, externalId), those linked to an external record only. */
export function linkedRecords<R extends { sourceSystem?: string | null; externalId?: string | null }>(
  records: readonly R[],
) {
  return new Map(records.filter((record) => record.externalId).map((record) => [matchKey(record), record]));
}

/** What a row leads to at preview, where nothing is acknowledged: the words commit uses, never a past tense. */
export function plannedOutcome(annotation: Annotation): Outcome {
  if (annotation === 'create' || annotation === 'update' || annotation === 'unchanged') return annotation;
  return isHeld(annotation) ? 'held' : 'refused';
}

/**
 * Commit re-derives every row and decides here: a row whose acknowledged annotation (or matched record) differs
 * from the re-derived one is refused, since another import or edit ran in between; a held row is applied only when
 * acknowledged, linked to its match when the acknowledgement names it, created new otherwise; the rest follow their
 * annotation.
 */
export function decide(derived: DerivedRow, ack?: { annotation: Annotation; targetId?: string }): Decision {
  if (ack && ack.annotation !== derived.annotation)
    return {
      apply: null,
      outcome: 'refused',
      reason: `Changed since preview: the row is now ${derived.annotation}, not ${ack.annotation}; preview again`,
    };
  if (isHeld(derived.annotation)) {
    if (!ack)
      return {
        apply: null,
        outcome: 'held',
        reason: `${derived.reason ?? 'A fuzzy match'}; echo acknowledge to link to it or to create a new record`,
      };
    if (ack.targetId === undefined) return { apply: 'create', outcome: 'create' };
    if (ack.targetId !== derived.targetId)
      return {
        apply: null,
        outcome: 'refused',
        reason: 'Changed since preview: the row now matches another record; preview again',
      };
    return { apply: 'update', outcome: 'update' };
  }
  if (derived.annotation === 'create') return { apply: 'create', outcome: 'create' };
  if (derived.annotation === 'update') return { apply: 'update', outcome: 'update' };
  return { apply: null, outcome: plannedOutcome(derived.annotation), reason: derived.reason };
}

/** How many rows have each outcome. */
export function summarize(rows: readonly { outcome: Outcome }[]) {
  const summary = Object.fromEntries(outcomes.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
  for (const row of rows) summary[row.outcome] += 1;
  return summary;
}

/** The part of a row report every import shares: row, the externalId given, annotation, outcome, why. */
export const reportRow = (row: DerivedRow, outcome: Outcome, reason = row.reason) => ({
  row: row.row,
  ...(row.externalId ? { externalId: row.externalId } : {}),
  annotation: row.annotation,
  outcome,
  ...(reason ? { reason } : {}),
  ...(row.issues ? { issues: row.issues } : {}),
});

/**
 * The one summary audit event of a committed import, on the organization imported into: how many rows it was given
 * and what became of them. Written last in the batch of the import's own events.
 */
export function importSummaryEvent(
  org: { id: string; name: string },
  action: string,
  rows: readonly { outcome: Outcome }[],
) {
  return {
    orgId: org.id,
    action,
    resourceType: 'organization',
    resourceId: org.id,
    resourceName: org.name,
    details: { rows: rows.length, ...summarize(rows) },
  };
}
