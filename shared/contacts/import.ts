import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { selectSite } from '../hierarchy/store.ts';
import { importRecords } from '../imports/csv.ts';
import {
  type Decision,
  type DerivedRow,
  decide,
  givenExternalId,
  importSummaryEvent,
  invalidRow,
  matchKey,
  plannedOutcome,
  repeatedKeys,
  reportRow,
  rowIssues,
  rowNumberOf,
  summarize,
} from '../imports/rows.ts';
import type { Outcome } from '../imports/schemas.ts';
import { auditedFields, contactResource, contactSnapshot, contactsWrite } from './contacts.ts';
import { type ContactRow, type contactImport, contactRow, importableFields } from './schemas.ts';
import type { ContactRecord, ContactValues } from './store.ts';
import * as store from './store.ts';

type ImportInput = z.output<typeof contactImport>;
type Acknowledgement = NonNullable<ContactRow['acknowledge']>;

/**
 * A name matches fuzzily at this pg_trgm similarity or above. Measured on name pairs
 * (test/functions/contacts/import.test.ts): a dropped letter or swapped order ("Jon Smith" / "John Smith" 0.67,
 * "Smith, John" / "John Smith" 1.0) stays above it; another first name ("Jane Doe" / "John Doe" 0.45) below.
 */
export const nameSimilarityThreshold = 0.6;

const maxRows = 1000;

/** The rows of a request, JSON or CSV, as fields: a CSV's roles split at ; or |. */
function givenRows(input: ImportInput): Record<string, unknown>[] {
  const records = importRecords(input, { fields: importableFields, maxRows, mapping: input.mapping });
  if (input.rows) return records;
  return records.map((record) =>
    typeof record.roles === 'string'
      ? { ...record, roles: record.roles.split(/[;|]/).map((role) => role.trim().toLowerCase()) }
      : record,
  );
}

interface Derived extends DerivedRow {
  values?: ContactValues;
  existing?: ContactRecord;
  match?: { contactId: string; name: string; email: string | null; similarity?: number };
}

const same = (a: unknown, b: unknown) =>
  JSON.stringify(Array.isArray(a) ? [...a].sort() : (a ?? null)) ===
  JSON.stringify(Array.isArray(b) ? [...b].sort() : (b ?? null));

interface Checked {
  row: number;
  externalId?: string;
  values?: ContactValues;
  acknowledge?: Acknowledgement;
  issues?: { path: string; message: string }[];
}

/** Each row checked on its own; an externalId without sourceSystem takes the import's. */
function checkRows(given: Record<string, unknown>[], sourceSystem?: string): Checked[] {
  return given.map((raw, index) => {
    const row = rowNumberOf(index);
    const result = contactRow.safeParse(raw);
    if (!result.success) return { row, externalId: givenExternalId(raw), issues: rowIssues(result.error) };
    const { acknowledge, ...values } = result.data;
    if (values.externalId && !values.sourceSystem && sourceSystem) values.sourceSystem = sourceSystem;
    if (Boolean(values.externalId) !== Boolean(values.sourceSystem))
      return {
        row,
        externalId: values.externalId,
        issues: [{ path: 'externalId', message: 'externalId and sourceSystem go together' }],
      };
    return { row, values: values as ContactValues, acknowledge };
  });
}

/** What the rows are matched against: live sites, contacts linked by key, by e-mail and by similar name. */
async function selectMatches(db: Db, orgId: string, checked: Checked[]) {
  const siteIds = [...new Set(checked.flatMap((row) => (row.values?.siteId ? [row.values.siteId] : [])))];
  const liveSites = new Set<string>();
  for (const siteId of siteIds) if (await selectSite(db, orgId, siteId)) liveSites.add(siteId);
  const valid = checked.filter((row) => row.values && (!row.values.siteId || liveSites.has(row.values.siteId)));
  const keyed = valid.flatMap((row) =>
    row.values!.externalId ? [{ sourceSystem: row.values!.sourceSystem!, externalId: row.values!.externalId! }] : [],
  );
  const linked = new Map((await store.selectContactsByKeys(db, orgId, keyed)).map((c) => [matchKey(c), c]));
  const unlinked = valid.filter((row) => !row.values!.externalId || !linked.has(matchKey(row.values!)));
  const byEmail = new Map<string, ContactRecord>();
  const emails = unlinked.flatMap((row) => (row.values!.email ? [row.values!.email] : []));
  for (const contact of await store.selectContactsByEmails(db, orgId, emails))
    if (!byEmail.has(contact.emailKey)) byEmail.set(contact.emailKey, contact);
  const nameless = unlinked.filter((row) => !byEmail.has(emailOf(row.values!) ?? ''));
  const names = nameless.map((row) => ({
    row: row.row,
    name: row.values!.name!,
    sourceSystem: row.values!.sourceSystem ?? null,
  }));
  const byName = new Map(
    (await store.selectNearestNames(db, orgId, names, nameSimilarityThreshold)).map((hit) => [hit.row, hit]),
  );
  return { liveSites, linked, byEmail, byName, repeated: repeatedKeys(keyed) };
}

const emailOf = (values: ContactValues) => values.email?.trim().toLowerCase();

/**
 * Annotates each row against the organization's contacts: `invalid` (field and reason), `conflict` (an externalId
 * twice in the request, or an e-mail held by a contact linked to another externalId of the same system), `update`
 * or `unchanged` when its (sourceSystem, externalId) is linked, else `email-match` (same e-mail ignoring case and
 * surrounding whitespace), `name-match` (similar name) or `create`.
 */
async function deriveRows(db: Db, orgId: string, given: Record<string, unknown>[], sourceSystem?: string) {
  const checked = checkRows(given, sourceSystem);
  const { liveSites, linked, byEmail, byName, repeated } = await selectMatches(db, orgId, checked);
  return checked.map((row): Derived & { acknowledge?: Acknowledgement } => {
    const values = row.values;
    if (!values) return invalidRow(row.row, row.issues!, row.externalId);
    const base = { row: row.row, ...(values.externalId ? { externalId: values.externalId } : {}) };
    const ack = { acknowledge: row.acknowledge };
    if (values.siteId && !liveSites.has(values.siteId))
      return { ...invalidRow(row.row, [{ path: 'siteId', message: 'Unknown site' }], values.externalId), ...ack };
    if (values.externalId && repeated.has(matchKey(values)))
      return { ...base, ...ack, annotation: 'conflict', reason: 'Another row of this import has the same externalId' };
    const existing = values.externalId ? linked.get(matchKey(values)) : undefined;
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
    const name = byName.get(row.row);
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
  ...reportRow(row, outcome, reason),
  ...(contactId ? { contactId } : {}),
  ...(row.match ? { match: row.match } : {}),
});

/** POST …/contacts/import/preview: each row's annotation and what commit would do with it; stores nothing. */
export async function previewContactImport(db: Db, principal: Principal, orgId: string, input: ImportInput) {
  await reachableOrganization(db, principal, orgId, contactsWrite);
  const rows = (await deriveRows(db, orgId, givenRows(input), input.sourceSystem)).map((row) =>
    present(row, plannedOutcome(row.annotation)),
  );
  return { committed: false, summary: summarize(rows), rows };
}

type DerivedContact = Awaited<ReturnType<typeof deriveRows>>[number];

/** Each row's decision; two held rows linking to the same contact: the second is refused. */
function decideRows(derived: DerivedContact[], acknowledged: Map<number, Acknowledgement>): Decision[] {
  const linkedTargets = new Set<string>();
  return derived.map((row) => {
    const ack = row.acknowledge ?? acknowledged.get(row.row);
    const decision = decide(row, ack && { annotation: ack.annotation, targetId: ack.contactId });
    if (decision.apply !== 'update' || row.annotation === 'update') return decision;
    if (linkedTargets.has(row.targetId!))
      return { apply: null, outcome: 'refused', reason: 'Another row of this import links to the same contact' };
    linkedTargets.add(row.targetId!);
    return decision;
  });
}

/** Stores the decided creates and updates; the row reports with the contact each row created or changed. */
async function applyRows(tx: Db, orgId: string, derived: DerivedContact[], decisions: Decision[]) {
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
  const rows = await db.transaction(async (tx) => {
    await store.lockContactsOf(tx, orgId);
    const derived = await deriveRows(tx, orgId, given, input.sourceSystem);
    const { rows, created, updated } = await applyRows(tx, orgId, derived, decideRows(derived, acknowledged));
    await auditChange(tx, audit, [
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
    return rows;
  });
  return { committed: true, summary: summarize(rows), rows };
}
