import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, writeRouteAudits } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { ValidationFailed } from '../errors.ts';
import { selectSite } from '../hierarchy/store.ts';
import { parseCsv } from '../imports/csv.ts';
import { type DerivedRow, decide, importSummaryEvent, plannedOutcome, summarize } from '../imports/rows.ts';
import type { Outcome } from '../imports/schemas.ts';
import { auditedFields, contactResource, contactSnapshot, contactsWrite } from './contacts.ts';
import { type ContactRow, type contactImport, contactRow, importableFields } from './schemas.ts';
import type { ContactRecord, ContactValues } from './store.ts';
import * as store from './store.ts';

type ImportInput = z.output<typeof contactImport>;
type Acknowledgement = NonNullable<ContactRow['acknowledge']>;

/**
 * seed 2.1 rule 2: a name matches fuzzily at this pg_trgm similarity or above. Measured on name pairs
 * (test/functions/contacts/import.test.ts): a dropped letter or swapped order ("Jon Smith" / "John Smith" 0.67,
 * "Smith, John" / "John Smith" 1.0) stays above it; another first name ("Jane Doe" / "John Doe" 0.45) below.
 */
export const nameSimilarityThreshold = 0.6;

const maxRows = 1000;

/** A CSV header or field name as the default mapping compares them: case, spaces, - and _ ignored. */
const headerKey = (text: string) => text.toLowerCase().replace(/[\s_-]+/g, '');

/** CSV records as rows of fields: each mapped column's non-empty cells; roles split at ; or |. */
function csvRows(csv: string, mapping: ImportInput['mapping']): Record<string, unknown>[] {
  const { header, records } = parseCsv(csv);
  if (records.length === 0 || records.length > maxRows)
    throw ValidationFailed('The CSV must hold 1 to 1,000 data rows', [
      { path: 'body.csv', message: `${records.length} data rows; 1 to ${maxRows} allowed`, code: 'too_big' },
    ]);
  const columns = importableFields.flatMap((field) => {
    const wanted = mapping ? mapping[field] : field;
    if (wanted === undefined) return [];
    const index = mapping
      ? header.indexOf(wanted.trim())
      : header.findIndex((name) => headerKey(name) === headerKey(field));
    return index === -1 ? [] : [{ field, index }];
  });
  return records.map((record) =>
    Object.fromEntries(
      columns.flatMap(({ field, index }) => {
        const cell = record[index]!.trim();
        if (cell === '') return [];
        return [[field, field === 'roles' ? cell.split(/[;|]/).map((role) => role.trim().toLowerCase()) : cell]];
      }),
    ),
  );
}

interface Derived extends DerivedRow {
  values?: ContactValues;
  existing?: ContactRecord;
  match?: { contactId: string; name: string; email: string | null; similarity?: number };
}

const keyOf = (row: { sourceSystem?: string | null; externalId?: string | null }) =>
  JSON.stringify([row.sourceSystem, row.externalId]);
const same = (a: unknown, b: unknown) =>
  JSON.stringify(Array.isArray(a) ? [...a].sort() : (a ?? null)) ===
  JSON.stringify(Array.isArray(b) ? [...b].sort() : (b ?? null));

/**
 * Annotates each row against the organization's contacts (seed 2.1): `invalid` (field and reason), `conflict`
 * (an externalId twice in the request, or an e-mail held by a contact linked to another externalId of the same
 * system), `update` or `unchanged` when its (sourceSystem, externalId) is linked, else `email-match` (same e-mail
 * ignoring case and surrounding whitespace), `name-match` (similar name) or `create`.
 */
async function deriveRows(db: Db, orgId: string, given: Record<string, unknown>[], sourceSystem?: string) {
  const parsed = given.map((raw, index) => {
    const result = contactRow.safeParse(raw);
    if (!result.success)
      return {
        index,
        issues: result.error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message })),
      };
    const { acknowledge, ...values } = result.data;
    if (values.externalId && !values.sourceSystem && sourceSystem) values.sourceSystem = sourceSystem;
    if (Boolean(values.externalId) !== Boolean(values.sourceSystem))
      return { index, issues: [{ path: 'externalId', message: 'externalId and sourceSystem go together' }] };
    return { index, values: values as ContactValues, acknowledge };
  });
  const siteIds = [...new Set(parsed.flatMap((row) => (row.values?.siteId ? [row.values.siteId] : [])))];
  const liveSites = new Set<string>();
  for (const siteId of siteIds) if (await selectSite(db, orgId, siteId)) liveSites.add(siteId);
  const valid = parsed.filter((row) => row.values && (!row.values.siteId || liveSites.has(row.values.siteId)));
  const keyed = valid.filter((row) => row.values!.externalId);
  const linked = new Map(
    (
      await store.selectContactsByKeys(
        db,
        orgId,
        keyed.map((row) => ({ sourceSystem: row.values!.sourceSystem!, externalId: row.values!.externalId! })),
      )
    ).map((c) => [keyOf(c), c]),
  );
  const keyCounts = new Map<string, number>();
  for (const row of keyed) keyCounts.set(keyOf(row.values!), (keyCounts.get(keyOf(row.values!)) ?? 0) + 1);
  const unlinked = valid.filter((row) => !row.values!.externalId || !linked.has(keyOf(row.values!)));
  const byEmail = new Map<string, ContactRecord>();
  for (const contact of await store.selectContactsByEmails(
    db,
    orgId,
    unlinked.flatMap((row) => (row.values!.email ? [row.values!.email] : [])),
  ))
    if (!byEmail.has(contact.emailKey)) byEmail.set(contact.emailKey, contact);
  const emailOf = (values: ContactValues) => values.email?.trim().toLowerCase();
  const nameless = unlinked.filter((row) => !byEmail.has(emailOf(row.values!) ?? ''));
  const byName = new Map(
    (
      await store.selectNearestNames(
        db,
        orgId,
        nameless.map((row) => ({
          row: row.index,
          name: row.values!.name!,
          sourceSystem: row.values!.sourceSystem ?? null,
        })),
        nameSimilarityThreshold,
      )
    ).map((hit) => [hit.row, hit]),
  );

  return parsed.map((row): Derived & { acknowledge?: Acknowledgement } => {
    const values = row.values;
    const base = { row: row.index, ...(values?.externalId ? { externalId: values.externalId } : {}) };
    if (!values) return { ...base, annotation: 'invalid', reason: 'The row does not check', issues: row.issues };
    const ack = { acknowledge: row.acknowledge };
    if (values.siteId && !liveSites.has(values.siteId))
      return {
        ...base,
        ...ack,
        annotation: 'invalid',
        reason: 'The row does not check',
        issues: [{ path: 'siteId', message: 'Unknown site' }],
      };
    if (values.externalId && keyCounts.get(keyOf(values))! > 1)
      return { ...base, ...ack, annotation: 'conflict', reason: 'Another row of this import has the same externalId' };
    const existing = values.externalId ? linked.get(keyOf(values)) : undefined;
    if (existing) {
      const changed = Object.entries(values).some(
        ([field, value]) => !same(value, existing[field as keyof ContactRecord]),
      );
      return { ...base, ...ack, annotation: changed ? 'update' : 'unchanged', targetId: existing.id, values, existing };
    }
    const email = byEmail.get(emailOf(values) ?? '');
    if (email) {
      const match = { contactId: email.id, name: email.name, email: email.email };
      if (values.sourceSystem && email.sourceSystem === values.sourceSystem)
        return {
          ...base,
          ...ack,
          annotation: 'conflict',
          reason: `The e-mail belongs to a contact already linked to ${values.sourceSystem} externalId ${email.externalId}`,
          match,
        };
      return {
        ...base,
        ...ack,
        annotation: 'email-match',
        reason: 'An existing contact has the same e-mail',
        targetId: email.id,
        values,
        existing: email,
        match,
      };
    }
    const name = byName.get(row.index);
    if (name)
      return {
        ...base,
        ...ack,
        annotation: 'name-match',
        reason: 'An existing contact has a similar name',
        targetId: name.contact.id,
        values,
        existing: name.contact,
        match: {
          contactId: name.contact.id,
          name: name.contact.name,
          email: name.contact.email,
          similarity: Math.round(name.similarity * 1000) / 1000,
        },
      };
    return { ...base, ...ack, annotation: 'create', values };
  });
}

const present = (row: Derived, outcome: Outcome, reason = row.reason, contactId = row.targetId) => ({
  row: row.row,
  ...(row.externalId ? { externalId: row.externalId } : {}),
  annotation: row.annotation,
  outcome,
  ...(reason ? { reason } : {}),
  ...(row.issues ? { issues: row.issues } : {}),
  ...(contactId ? { contactId } : {}),
  ...(row.match ? { match: row.match } : {}),
});

const givenRows = (input: ImportInput) => input.rows ?? csvRows(input.csv!, input.mapping);

/** POST …/contacts/import/preview: each row's annotation and what commit would do with it; stores nothing. */
export async function previewContactImport(db: Db, principal: Principal, orgId: string, input: ImportInput) {
  await reachableOrganization(db, principal, orgId, contactsWrite);
  const rows = (await deriveRows(db, orgId, givenRows(input), input.sourceSystem)).map((row) =>
    present(row, plannedOutcome(row.annotation)),
  );
  return { committed: false, summary: summarize(rows), rows };
}

/**
 * POST …/contacts/import: re-derives every row under the organization's contact lock and applies what it may
 * (imports/rows.ts decide): linked rows are updated (a second identical import reports every row unchanged),
 * held fuzzy matches only when acknowledged, and a row whose annotation changed since preview is refused. One
 * bad row never blocks the rest. Audited per contact created (contact.create) or changed (contact.update), and
 * once as contact.import.
 */
export async function commitContactImport(
  db: Db,
  principal: Principal,
  orgId: string,
  input: ImportInput,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, contactsWrite);
  const given = givenRows(input);
  const acknowledged = new Map((input.acknowledgements ?? []).map(({ row, ...ack }) => [row, ack]));
  const { rows, created, updated } = await db.transaction(async (tx) => {
    await store.lockContactsOf(tx, orgId);
    const derived = await deriveRows(tx, orgId, given, input.sourceSystem);
    const linkedTargets = new Set<string>();
    const decisions = derived.map((row) => {
      const ack = row.acknowledge ?? acknowledged.get(row.row);
      const decision = decide(row, ack && { annotation: ack.annotation, targetId: ack.contactId });
      if (decision.apply === 'update' && row.annotation !== 'update') {
        if (linkedTargets.has(row.targetId!))
          return {
            apply: null,
            outcome: 'refused' as const,
            reason: 'Another row of this import links to the same contact',
          };
        linkedTargets.add(row.targetId!);
      }
      return decision;
    });
    const creates = derived.flatMap((row, i) =>
      decisions[i]!.apply === 'create' ? [{ row: row.row, values: { ...row.values!, id: randomUUID() } }] : [],
    );
    const updates = derived.filter((_, i) => decisions[i]!.apply === 'update');
    const created = await store.insertContactRows(
      tx,
      orgId,
      creates.map((create) => create.values),
    );
    const updated = await store.updateContactRows(
      tx,
      orgId,
      updates.map((row) => ({ id: row.targetId!, change: row.values! })),
    );
    const createdIds = new Map(creates.map((create) => [create.row, create.values.id]));
    const rows = derived.map((row, i) =>
      present(row, decisions[i]!.outcome, decisions[i]!.reason, createdIds.get(row.row) ?? row.targetId),
    );
    const before = new Map(updates.map((row) => [row.targetId!, row.existing!]));
    return { rows, created, updated: updated.map((after) => ({ before: before.get(after.id)!, after })) };
  });
  writeRouteAudits(audit, [
    ...created.map((contact) => ({
      orgId,
      action: 'contact.create',
      ...contactResource(contact),
      details: { after: contactSnapshot(contact) },
    })),
    ...updated.map(({ before, after }) => ({
      orgId,
      action: 'contact.update',
      ...contactResource(after),
      details: changedFields(before, after, auditedFields),
    })),
    importSummaryEvent(org, 'contact.import', rows),
  ]);
  return { committed: true, summary: summarize(rows), rows };
}
