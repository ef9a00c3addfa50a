import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { DomainError } from '../errors.ts';
import { looseName } from '../imports/csv.ts';
import {
  type Decision,
  type DerivedRow,
  decide,
  linkedRecords,
  matchKey,
  plannedOutcome,
  repeatedKeys,
  reportRow,
  rowNumberOf,
  summarize,
} from '../imports/rows.ts';
import type { Annotation, Outcome } from '../imports/schemas.ts';
import { auditDefinition, checkDefinition, insertCheckedDefinition, snapshot } from './definitions.ts';
import { importPartner, importRecords } from './import-source.ts';
import {
  type definitionsImportReply,
  type definitionsImport as definitionsImportSchema,
  type FieldType,
  fieldTypes,
  maxImportRows,
} from './schemas.ts';
import type { DefinitionRecord, DefinitionValues } from './store.ts';
import * as store from './store.ts';

type Input = z.output<typeof definitionsImportSchema>;
type Reply = z.output<typeof definitionsImportReply>;
type Row = Reply['rows'][number];
type Proposal = Pick<Row, 'name' | 'key' | 'type' | 'choices'> & { externalId: string | null; reason?: string };

/** A record's cell by any of `names`, compared loosely (case, spaces, - and _ ignored). */
const cell = (record: Record<string, unknown>, ...names: string[]) => {
  const wanted = names.map(looseName);
  const found = Object.entries(record).find(([column]) => wanted.includes(looseName(column)));
  if (!found || found[1] === null || found[1] === undefined) return '';
  return Array.isArray(found[1]) ? found[1].map(String).join('|') : String(found[1]).trim();
};

/** A key proposed from a name: snake_case of its letters and digits, starting with a letter, at most 64. */
export function proposedKey(name: string) {
  const snake = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return (/^[a-z]/.test(snake) ? snake : `f_${snake}`).slice(0, 64).replace(/_+$/, '');
}

const choicesOf = (text: string) =>
  text
    ? text
        .split(text.includes('|') ? '|' : text.includes(';') ? ';' : ',')
        .map((choice) => choice.trim())
        .filter(Boolean)
    : null;

/** The other RMMs' field types, as they name them, to ours; undefined: not importable (secrets), with the reason. */
const foreignTypes: Record<string, FieldType | undefined> = {
  text: 'text',
  textmultiline: 'text',
  multilinetext: 'text',
  wysiwyg: 'text',
  email: 'text',
  phone: 'text',
  ipaddress: 'text',
  string: 'text',
  checkbox: 'boolean',
  boolean: 'boolean',
  toggle: 'boolean',
  dropdown: 'dropdown',
  combobox: 'dropdown',
  list: 'dropdown',
  multiselect: 'multi-select',
  date: 'date',
  datetime: 'date',
  numeric: 'number',
  number: 'number',
  integer: 'number',
  decimal: 'number',
  url: 'url',
};
const secretTypes = ['textencrypted', 'secure', 'password', 'encrypted'];

function typeOf(text: string): { type: FieldType | null; reason?: string } {
  const loose = looseName(text);
  if (secretTypes.includes(loose)) return { type: null, reason: `A ${text} field holds secrets: not imported` };
  const type = (fieldTypes as readonly string[]).includes(text) ? (text as FieldType) : foreignTypes[loose];
  return type ? { type } : { type: null, reason: `Unknown field type ${JSON.stringify(text)}` };
}

/**
 * One row of a field-list export as a proposed definition, per preset (docs/custom-fields.md "What the exports
 * look like"): Datto RMM UDFs are text fields udf1…udf30 with a label; NinjaOne fields have an API name, a label,
 * a type and options; ConnectWise Automate EDFs a name, a type and options; the generic CSV our own columns
 * (name, key, type, choices), identified by its externalId column when it has one, else by its key.
 */
function propose(sourceSystem: Input['sourceSystem'], record: Record<string, unknown>): Proposal {
  if (sourceSystem === 'datto-rmm') {
    const number = /(\d+)\s*$/.exec(cell(record, 'udf', 'field', 'udfNumber', 'number', 'id'))?.[1];
    const label = cell(record, 'label', 'name', 'udfLabel');
    const externalId = number && Number(number) >= 1 && Number(number) <= 30 ? `udf${Number(number)}` : null;
    const base = { externalId, name: label || null, type: 'text' as const, choices: null };
    if (!externalId) return { ...base, key: null, reason: 'A Datto RMM UDF is numbered 1 to 30 (udf1 … udf30)' };
    if (!label) return { ...base, key: null, reason: 'The UDF has no label: it is unused in Datto RMM' };
    return { ...base, key: proposedKey(label) };
  }
  const name = cell(record, 'label', 'displayName', 'name');
  const apiName = cell(record, 'name', 'fieldName', 'apiName');
  const typed = typeOf(cell(record, 'type', 'fieldType', 'dataType') || 'text');
  const choices = choicesOf(cell(record, 'choices', 'options', 'values', 'dropdownValues'));
  const key = cell(record, 'key') || proposedKey(sourceSystem === 'generic' ? name : apiName || name);
  const externalId =
    sourceSystem === 'generic'
      ? cell(record, 'externalId', 'id') || (name ? key : null)
      : cell(record, 'id', 'externalId') || apiName || null;
  return {
    externalId,
    name: name || null,
    key: name || apiName ? key : null,
    type: typed.type,
    choices,
    reason: typed.reason,
  };
}

const sameDefinition = (a: DefinitionRecord, b: DefinitionValues) =>
  a.name === b.name && a.type === b.type && JSON.stringify(a.choices) === JSON.stringify(b.choices);

type Derived = DerivedRow & Omit<Proposal, 'externalId'> & { fieldId?: string; values?: DefinitionValues };

/** The definition a proposal makes, or why it cannot be one. */
function definitionOf(input: Input, partnerId: string, proposal: Proposal): DefinitionValues | { reason: string } {
  if (proposal.reason || !proposal.key || !proposal.name || !proposal.type || !proposal.externalId)
    return { reason: proposal.reason ?? 'A field needs a name, a type and an id (or a key) in the export' };
  const values: DefinitionValues = {
    partnerId,
    orgId: null,
    scope: 'device',
    key: proposal.key,
    name: proposal.name.slice(0, 100),
    type: proposal.type,
    choices: proposal.type === 'dropdown' || proposal.type === 'multi-select' ? proposal.choices : null,
    min: null,
    max: null,
    required: false,
    defaultValue: null,
    description: null,
    osTypes: null,
    scriptWritable: false,
    sourceSystem: input.sourceSystem,
    externalId: proposal.externalId,
  };
  try {
    checkDefinition(values);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const details = error.details as { message: string }[] | undefined;
    return { reason: details?.[0]?.message ?? error.message };
  }
  return values;
}

/**
 * Derives every row against the partner's definitions: `invalid` (the reason), `unchanged` or `update` for a
 * definition imported before from the same (sourceSystem, externalId), `conflict` when another definition holds
 * the key (or the type would change, or the request repeats the externalId), `create` otherwise.
 */
function deriveDefinitions(
  input: Input,
  partnerId: string,
  records: Record<string, unknown>[],
  existing: DefinitionRecord[],
): Derived[] {
  const keys = new Map(existing.map((field) => [field.key, field]));
  const linked = linkedRecords(existing.filter((field) => field.orgId === null));
  const proposals = records.map((record) => propose(input.sourceSystem, record));
  const repeated = repeatedKeys(proposals.map((p) => ({ sourceSystem: input.sourceSystem, externalId: p.externalId })));
  const taken = new Set<string>();
  return proposals.map((proposal, index) => {
    const { externalId, ...proposed } = proposal;
    const base = { row: rowNumberOf(index), ...proposed, ...(externalId ? { externalId } : {}) };
    const derived = (annotation: Annotation, extra: Partial<Derived> = {}): Derived => ({
      ...base,
      annotation,
      ...extra,
    });
    const values = definitionOf(input, partnerId, proposal);
    if ('reason' in values) return derived('invalid', { reason: values.reason });
    if (repeated.has(matchKey(values)))
      return derived('conflict', { reason: 'Another row of this import has the same externalId' });
    const previous = linked.get(matchKey(values));
    if (previous) {
      values.key = previous.key;
      if (sameDefinition(previous, values))
        return derived('unchanged', { fieldId: previous.id, targetId: previous.id });
      if (previous.type !== values.type)
        return derived('conflict', {
          fieldId: previous.id,
          reason: `Imported before as ${previous.type}; its type does not change`,
        });
      return derived('update', { fieldId: previous.id, targetId: previous.id, values });
    }
    const holder = keys.get(values.key);
    if (holder)
      return derived('conflict', {
        fieldId: holder.id,
        reason: `The key ${values.key} is taken by the ${holder.orgId ? 'organization' : 'partner-wide'} custom field "${holder.name}"`,
      });
    if (taken.has(values.key)) return derived('conflict', { reason: `An earlier row proposes the key ${values.key}` });
    taken.add(values.key);
    return derived('create', { values });
  });
}

const present = (row: Derived, outcome: Outcome, reason = row.reason, fieldId = row.fieldId): Row => ({
  ...reportRow(row, outcome, reason),
  name: row.name,
  key: row.key,
  type: row.type,
  choices: row.choices,
  ...(fieldId ? { fieldId } : {}),
});

const toReply = (committed: boolean, input: Input, sha256: string, rows: Row[]) => ({
  committed,
  sourceSystem: input.sourceSystem,
  sha256,
  summary: summarize(rows),
  rows,
});

export async function previewDefinitionsImport(db: Db, principal: Principal, input: Input) {
  const { partnerId } = await importPartner(db, principal, input, false);
  const { records, sha256 } = importRecords(input, maxImportRows);
  const derived = deriveDefinitions(input, partnerId, records, await store.selectPartnerDefinitions(db, partnerId));
  return toReply(
    false,
    input,
    sha256,
    derived.map((row) => present(row, plannedOutcome(row.annotation))),
  );
}

/**
 * A row acknowledged as create or update that is now unchanged was applied by an earlier run of the same commit: a
 * resumed commit reports it unchanged rather than refusing it; otherwise the shared decision.
 */
function decideDefinition(row: Derived, ack?: { annotation: Annotation }): Decision {
  const resumed = row.annotation === 'unchanged' && (ack?.annotation === 'create' || ack?.annotation === 'update');
  return decide(row, resumed ? undefined : ack);
}

/** Stores one decided row; the change it made, for the audit trail. */
async function applyDefinition(tx: Db, row: Derived, decision: Decision, before: DefinitionRecord[]) {
  if (decision.apply === 'create') {
    const after = await insertCheckedDefinition(tx, row.values!);
    return { report: present(row, decision.outcome, decision.reason, after.id), change: { after } };
  }
  if (decision.apply === 'update') {
    const previous = before.find((field) => field.id === row.fieldId)!;
    const after = await store.updateDefinition(tx, previous.id, { ...previous, ...row.values!, key: previous.key });
    return { report: present(row, decision.outcome, decision.reason), change: { before: previous, after } };
  }
  return { report: present(row, decision.outcome, decision.reason) };
}

/**
 * Creates and updates the definitions inside the partner's lock, re-deriving every row there; a row whose annotation
 * differs from the one acknowledged from preview is refused. Idempotent: a second run finds every row `unchanged`.
 * Each definition is audited as custom_field.create or .update; one custom_field.import.definitions summary row (on
 * the partner's oldest organization: partner users read every organization's trail) closes the pass.
 */
export async function commitDefinitionsImport(db: Db, principal: Principal, input: Input, audit: AuditContext) {
  const { partnerId } = await importPartner(db, principal, input, false);
  const { records, sha256 } = importRecords(input, maxImportRows);
  const acknowledged = new Map(input.acknowledgements?.map(({ row, ...ack }) => [row, ack]));
  return db.transaction(async (tx) => {
    await store.lockDefinitionsOf(tx, partnerId);
    const before = await store.selectPartnerDefinitions(tx, partnerId);
    const changes: { before?: DefinitionRecord; after: DefinitionRecord }[] = [];
    const rows: Row[] = [];
    for (const row of deriveDefinitions(input, partnerId, records, before)) {
      const applied = await applyDefinition(tx, row, decideDefinition(row, acknowledged.get(row.row)), before);
      rows.push(applied.report);
      if (applied.change) changes.push(applied.change);
    }
    for (const change of changes)
      await auditDefinition(
        tx,
        audit,
        change.after,
        change.before ? 'custom_field.update' : 'custom_field.create',
        () =>
          change.before
            ? { before: snapshot(change.before), after: snapshot(change.after) }
            : { after: snapshot(change.after) },
      );
    const reply = toReply(true, input, sha256, rows);
    const org = await store.selectSummaryOrganization(tx, partnerId, undefined);
    if (org)
      await auditChange(tx, audit, {
        orgId: org.id,
        action: 'custom_field.import.definitions',
        resourceType: 'organization',
        resourceId: org.id,
        resourceName: org.name,
        details: {
          sourceSystem: input.sourceSystem,
          fileName: input.fileName ?? null,
          sha256,
          rows: rows.length,
          summary: reply.summary,
        },
      });
    return reply;
  });
}
