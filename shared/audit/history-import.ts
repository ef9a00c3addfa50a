/**
 * Importing another system's audit history (docs/audit.md "Importing history"): rows of an RMM's audit export become
 * entries of the organization's trail, in the history lane (history-lane.ts), each marked `details.imported` and
 * matched on (sourceSystem, externalId) through audit_import_keys, so a second import of the same row is never a second
 * entry. The shared import model (docs/imports.md): preview annotates, commit re-derives and applies.
 */
import { createHash, randomUUID } from 'node:crypto';
import { v5 as uuidV5 } from 'uuid';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { Conflict, ValidationFailed } from '../errors.ts';
import { importRecords } from '../imports/csv.ts';
import {
  type DerivedRow,
  decide,
  givenExternalId,
  importSummaryEvent,
  invalidRow,
  plannedOutcome,
  reportRow,
  rowIssues,
  rowNumberOf,
  summarize,
} from '../imports/rows.ts';
import type { Outcome } from '../imports/schemas.ts';
import {
  type HistoryImport,
  type HistoryRow,
  historyCsvRow,
  historyFields,
  historyRow,
  maxHistoryRowBytes,
  maxHistoryRows,
} from './history-import-schemas.ts';
import {
  insertHistoryRows,
  type LaneEntry,
  type PreparedEntry,
  preparedEntry,
  selectImportKeys,
} from './history-import-store.ts';
import { armHistoryMove, historyRowsWait } from './history-lane.ts';
import { selectRetentionPolicy } from './retention-store.ts';
import { auditSealed } from './sealed.ts';
import { type AuditContext, auditChange } from './writer.ts';

/** The namespace of imported actors' ids: one actor of one source system is one UUID v5, in every import. */
export const importedActorNamespace = '1407dcbf-9357-4610-a2e0-188331b1d873';

/** A row as checked: its values and digest, or the issues that make it invalid. */
interface Checked {
  row: number;
  externalId?: string;
  values?: HistoryRow;
  digest?: string;
  issues?: { path: string; message: string }[];
}

interface Derived extends DerivedRow {
  values?: HistoryRow;
  digest?: string;
}

/** The organization imported into: the body's orgId, or an organization user's own (400 naming body.orgId without). */
async function importOrganization(db: Db, principal: Principal, orgId: string | undefined) {
  const id = orgId ?? (principal.scope === 'organization' ? principal.orgId : null);
  if (!id)
    throw ValidationFailed('orgId is required', [
      { path: 'body.orgId', message: 'Partner and platform callers name the organization', code: 'invalid_type' },
    ]);
  return reachableOrganization(db, principal, id, 'audit:manage');
}

/** A JSON value with its object keys sorted at every depth: a source's exports may order them differently. */
function sortedKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(sortedKeys);
  const object = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .map((key) => [key, sortedKeys(object[key])]),
  );
}

/**
 * JSON text PostgreSQL cannot store: JSON.stringify writes a NUL as \u0000 and a lone surrogate as \udxxx, an escape
 * preceded by an even number of backslashes (a backslash of the text itself is written \\).
 */
const unstorableEscape = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f])/i;
const unstorableJson = (text: string) => text.includes('\\u') && unstorableEscape.test(text);

/**
 * An instant as one text whatever its offset and digits, as PostgreSQL keeps it (UTC, microseconds, a fraction rounded
 * half to even as its input does), so that `10:00:00Z` and `12:00:00.000+02:00` are the same row's timestamp.
 */
function canonicalInstant(text: string): string {
  const fraction = /T[^.]*\.(\d+)/.exec(text)?.[1];
  const whole = Date.parse(fraction === undefined ? text : text.replace(`.${fraction}`, ''));
  const scaled = fraction === undefined ? 0 : Number(`0.${fraction}`) * 1_000_000;
  const rounded = Math.abs(scaled % 1) === 0.5 ? 2 * Math.round(scaled / 2) : Math.round(scaled);
  const seconds = new Date(whole + Math.floor(rounded / 1_000_000) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${String(rounded % 1_000_000).padStart(6, '0')}Z`;
}

/**
 * The canonical JSON of a row's fields (in the schema's order, the timestamp as one instant, the keys of details sorted
 * at every depth), one JSON.stringify per row.
 */
const canonicalJson = (values: HistoryRow) =>
  JSON.stringify({
    ...values,
    timestamp: canonicalInstant(values.timestamp),
    ...(values.details ? { details: sortedKeys(values.details) } : {}),
  });

/** Each row checked on its own, and the digest of those that check: SHA-256 of the canonical JSON of its fields. */
function checkRows(input: HistoryImport): Checked[] {
  const given = importRecords(input, { fields: historyFields, maxRows: maxHistoryRows });
  const schema = input.rows ? historyRow : historyCsvRow;
  return given.map((raw, index) => {
    const row = rowNumberOf(index);
    const result = schema.safeParse(raw);
    if (!result.success) return { row, externalId: givenExternalId(raw), issues: rowIssues(result.error) };
    const values = result.data;
    const text = canonicalJson(values);
    if (Buffer.byteLength(text) > maxHistoryRowBytes)
      return {
        row,
        externalId: values.externalId,
        issues: [
          { path: 'details', message: 'The row takes more than 1 MiB as JSON; an imported row takes at most 1 MiB' },
        ],
      };
    if (unstorableJson(text))
      return {
        row,
        externalId: values.externalId,
        issues: Object.entries(values)
          .filter(([, value]) => unstorableJson(JSON.stringify(value)))
          .map(([path]) => ({ path, message: 'Contains a NUL character or a lone surrogate, which cannot be stored' })),
      };
    return { row, externalId: values.externalId, values, digest: createHash('sha256').update(text).digest('hex') };
  });
}

const duplicateReason = 'Another row of this import has the same externalId';
const alteredReason = 'Imported before with other content; the trail is append-only';

/**
 * Annotates each checked row against the organization's retention and the rows imported before: `invalid` (its
 * issues, or older than the retention, which would delete it), `conflict` (an externalId twice in the request, or
 * imported before with another digest), `unchanged` (imported before with the same digest) or `create`. One read of
 * the policy and one of the keys, whatever the number of rows.
 */
async function deriveRows(db: Db, orgId: string, sourceSystem: string, checked: Checked[]): Promise<Derived[]> {
  const policy = await selectRetentionPolicy(db, orgId);
  const cutoff = policy ? Date.now() - policy.retentionDays * 86_400_000 : undefined;
  const counts = new Map<string, number>();
  for (const row of checked) if (row.values) counts.set(row.externalId!, (counts.get(row.externalId!) ?? 0) + 1);
  const stored = await selectImportKeys(db, orgId, sourceSystem, [...counts.keys()]);
  return checked.map((row): Derived => {
    if (!row.values) return invalidRow(row.row, row.issues!, row.externalId);
    const base = { row: row.row, externalId: row.externalId! };
    if (cutoff !== undefined && Date.parse(row.values.timestamp) < cutoff) {
      const retention = `Older than the organization's audit retention of ${policy!.retentionDays} days`;
      return {
        ...invalidRow(row.row, [{ path: 'timestamp', message: `${retention}, which would delete it` }], row.externalId),
        reason: retention,
      };
    }
    if (counts.get(row.externalId!)! > 1) return { ...base, annotation: 'conflict', reason: duplicateReason };
    const digest = stored.get(row.externalId!);
    if (digest === undefined) return { ...base, annotation: 'create', values: row.values, digest: row.digest };
    return digest === row.digest
      ? { ...base, annotation: 'unchanged' }
      : { ...base, annotation: 'conflict', reason: alteredReason };
  });
}

/**
 * The entry each checked row would become, made before the commit's transaction so that the transaction runs only
 * its statements (an entry of a row that turns out `unchanged` is dropped unused): a new id, and the JSON the insert
 * sends. The actor a UUID v5 of (sourceSystem, its id there, else its e-mail, else its name), the resource id kept in
 * details (an external id is none of ours), and details.imported saying where the row comes from and who imported it
 * when.
 */
function preparedEntries(principal: Principal, sourceSystem: string, checked: readonly Checked[]) {
  const importedBy = { actorType: principal.actorType, id: principal.id };
  const importedAt = new Date().toISOString();
  const actorIds = new Map<string, string>();
  const actorIdOf = (actor: string) => {
    const known = actorIds.get(actor);
    if (known) return known;
    const id = uuidV5(JSON.stringify([sourceSystem, actor]), importedActorNamespace);
    actorIds.set(actor, id);
    return id;
  };
  const entries = new Map<number, PreparedEntry>();
  for (const { row, values: v, digest } of checked) {
    if (!v) continue;
    const id = randomUUID();
    const entry: LaneEntry = {
      id,
      timestamp: v.timestamp,
      actorType: v.actorType,
      actorId: actorIdOf(v.actorId ?? v.actorEmail ?? v.actorName ?? 'unknown'),
      actorEmail: v.actorEmail ?? null,
      action: v.action,
      resourceType: v.resourceType ?? null,
      resourceName: v.resourceName ?? null,
      details: {
        ...v.details,
        ...(v.actorName !== undefined ? { actor: { name: v.actorName } } : {}),
        imported: {
          sourceSystem,
          externalId: v.externalId,
          ...(v.actorId !== undefined ? { actorId: v.actorId } : {}),
          ...(v.resourceId !== undefined ? { resourceId: v.resourceId } : {}),
          importedBy,
          importedAt,
        },
      },
      ipAddress: v.ipAddress ?? null,
      userAgent: v.userAgent ?? null,
      result: v.result,
      errorMessage: v.errorMessage ?? null,
      externalId: v.externalId,
      digest: digest!,
    };
    entries.set(row, preparedEntry(entry));
  }
  return entries;
}

const present = (row: Derived, outcome: Outcome, entryId?: string) => ({
  ...reportRow(row, outcome),
  ...(entryId ? { entryId } : {}),
});

/**
 * POST /api/v1/audit-logs/import/preview (audit:manage): each row's annotation and what commit would do with it, and
 * whether rows of the organization wait in the lane; stores nothing.
 */
export async function previewAuditHistoryImport(db: Db, principal: Principal, body: HistoryImport) {
  const org = await importOrganization(db, principal, body.orgId);
  const checked = checkRows(body);
  const rows = (await deriveRows(db, org.id, body.sourceSystem, checked)).map((row) =>
    present(row, plannedOutcome(row.annotation)),
  );
  return { committed: false, summary: summarize(rows), rows, waiting: await historyRowsWait(db, org.id) };
}

/**
 * Commits of one request tried at most (then 409): a retry follows a key committed meanwhile by another commit of the
 * same rows, or a deadlock (whatever the other transaction).
 */
const commitAttempts = 5;

/**
 * Whether a commit failed on a concurrent commit of some of its rows: a key it inserted was committed meanwhile by
 * the other (23505 on audit_import_keys' key; it waited for that commit), or the two waited on each other's keys
 * (40P01). From either executor: node-postgres names the constraint, the Data API's message does.
 */
function keyTakenConcurrently(error: unknown): boolean {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  if (code === '40P01') return true;
  return (
    code === '23505' && (constraint ?? /constraint "([^"]+)"/.exec(String(message))?.[1]) === 'audit_import_keys_pkey'
  );
}

/**
 * POST /api/v1/audit-logs/import (audit:manage): in one transaction, re-derives every row (the keys read again) and
 * inserts the `create` rows into the history lane with their keys in one statement, audited once as
 * audit.history.import with the summary; once committed, arms the move of the lane into the searchable trail. A
 * second identical import is all `unchanged` and adds no entry.
 *
 * Commits into one organization run side by side (a client sending an export's parts in flight): they are ordered
 * only by the seal, which holds the organization's chain from a statement's end to its commit. Rows two commits both
 * create meet at their keys: the second waits for the first, fails on the key the first committed (or on a deadlock,
 * when each waits on a key of the other) and is tried again whole, finding those rows `unchanged`.
 */
export async function commitAuditHistoryImport(db: Db, principal: Principal, audit: AuditContext, body: HistoryImport) {
  const org = await importOrganization(db, principal, body.orgId);
  const checked = checkRows(body);
  const entries = preparedEntries(principal, body.sourceSystem, checked);
  const commit = () =>
    db.transaction(async (tx) => {
      const derived = await deriveRows(tx, org.id, body.sourceSystem, checked);
      const decisions = derived.map((row) => decide(row));
      const created = derived.filter((_, i) => decisions[i]!.apply === 'create').map((row) => entries.get(row.row)!);
      await insertHistoryRows(tx, org.id, body.sourceSystem, created);
      const entryId = (row: Derived, i: number) =>
        decisions[i]!.apply === 'create' ? entries.get(row.row)!.id : undefined;
      const rows = derived.map((row, i) => present(row, decisions[i]!.outcome, entryId(row, i)));
      const summary = importSummaryEvent(org, 'audit.history.import', rows);
      await auditChange(tx, audit, { ...summary, details: { sourceSystem: body.sourceSystem, ...summary.details } });
      if (created.length > 0) {
        await auditSealed(tx, [{ orgId: org.id }]);
        tx.afterCommit(() => audit.pending.push(armHistoryMove()));
      }
      return { rows, waiting: await historyRowsWait(tx, org.id) };
    });
  for (let attempt = 1; ; attempt++) {
    try {
      const { rows, waiting } = await commit();
      return { committed: true, summary: summarize(rows), rows, waiting };
    } catch (error) {
      if (!keyTakenConcurrently(error)) throw error;
      if (attempt === commitAttempts)
        throw Object.assign(
          Conflict('Other imports of the same rows kept committing meanwhile; send the request again'),
          {
            cause: error,
          },
        );
    }
  }
}
