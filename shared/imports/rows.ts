import { type Annotation, heldAnnotations, type Outcome } from './schemas.ts';

/** One row as an import derived it from the request and the stored records. */
export interface DerivedRow {
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

/** What a row leads to at preview, where nothing is acknowledged. */
export function plannedOutcome(annotation: Annotation): Outcome {
  if (annotation === 'create') return 'created';
  if (annotation === 'update') return 'updated';
  if (annotation === 'unchanged' || annotation === 'matched') return 'unchanged';
  return isHeld(annotation) ? 'held' : 'refused';
}

/**
 * Commit re-derives every row and decides here (seed 2.1 rules 1 and 2): a row whose acknowledged annotation (or
 * matched record) differs from the re-derived one is refused, since another import or edit ran in between; a held
 * row is applied only when acknowledged, linked to its match when the acknowledgement names it, created new
 * otherwise; the rest follow their annotation.
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
    if (ack.targetId === undefined) return { apply: 'create', outcome: 'created' };
    if (ack.targetId !== derived.targetId)
      return {
        apply: null,
        outcome: 'refused',
        reason: 'Changed since preview: the row now matches another record; preview again',
      };
    return { apply: 'update', outcome: 'updated' };
  }
  if (derived.annotation === 'create') return { apply: 'create', outcome: 'created' };
  if (derived.annotation === 'update') return { apply: 'update', outcome: 'updated' };
  return { apply: null, outcome: plannedOutcome(derived.annotation), reason: derived.reason };
}

export function summarize(rows: readonly { outcome: Outcome }[]) {
  const summary = { created: 0, updated: 0, unchanged: 0, held: 0, refused: 0 };
  for (const row of rows) summary[row.outcome] += 1;
  return summary;
}

/**
 * The one summary audit event of a committed import (issue 15), on the organization imported into: how many rows
 * it was given and what became of them. Written last in the batch of the import's own events.
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
