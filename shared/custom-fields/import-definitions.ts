import type { z } from 'zod';
import { type AuditContext, writeRouteAudits } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { DomainError } from '../errors.ts';
import { auditDefinition, checkDefinition, insertCheckedDefinition, snapshot } from './definitions.ts';
import { importPartner, importRecords, looseName } from './import-source.ts';
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
type Proposal = Pick<Row, 'externalId' | 'name' | 'key' | 'type' | 'choices'> & { reason?: string };

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
 * a type and options; ConnectWise Automate EDFs a name, a type and options; the generic CSV our own columns.
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
  const externalId =
    sourceSystem === 'generic'
      ? cell(record, 'externalId') || null
      : cell(record, 'id', 'externalId') || apiName || null;
  const key = cell(record, 'key') || proposedKey(sourceSystem === 'generic' ? name : apiName || name);
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

/**
 * Derives every row against the partner's definitions: `invalid` (the reason), `unchanged` or `update` for a
 * definition imported before from the same (sourceSystem, externalId), `conflict` when another definition holds
 * the key (or the type would change), `create` otherwise.
 */
function deriveDefinitions(
  input: Input,
  partnerId: string,
  records: Record<string, unknown>[],
  existing: DefinitionRecord[],
) {
  const keys = new Map(existing.map((field) => [field.key, field]));
  const taken = new Set<string>();
  return records.map((record, row) => {
    const proposal = propose(input.sourceSystem, record);
    const base = { row, ...proposal, outcome: null };
    const result = (
      status: Row['status'],
      extra: { reason?: string; fieldId?: string; values?: DefinitionValues } = {},
    ) => ({
      ...base,
      status,
      ...extra,
    });
    if (proposal.reason || !proposal.key || !proposal.name || !proposal.type || !proposal.externalId)
      return result('invalid', { reason: proposal.reason ?? 'A field needs a name, a type and an id in the export' });
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
      return result('invalid', { reason: details?.[0]?.message ?? error.message });
    }
    const previous = existing.find(
      (field) =>
        field.orgId === null && field.sourceSystem === input.sourceSystem && field.externalId === proposal.externalId,
    );
    if (previous) {
      values.key = previous.key;
      if (sameDefinition(previous, values)) return result('unchanged', { fieldId: previous.id });
      if (previous.type !== values.type)
        return result('conflict', {
          fieldId: previous.id,
          reason: `Imported before as ${previous.type}; its type does not change`,
        });
      return result('update', { fieldId: previous.id, values });
    }
    const holder = keys.get(values.key);
    if (holder)
      return result('conflict', {
        fieldId: holder.id,
        reason: `The key ${values.key} is taken by the ${holder.orgId ? 'organization' : 'partner-wide'} custom field "${holder.name}"`,
      });
    if (taken.has(values.key)) return result('conflict', { reason: `An earlier row proposes the key ${values.key}` });
    taken.add(values.key);
    return result('create', { values });
  });
}

const summarize = (rows: { status: Row['status']; outcome: Row['outcome'] }[]) => {
  const summary: Reply['summary'] = { create: 0, update: 0, unchanged: 0, conflict: 0, invalid: 0, refused: 0 };
  for (const row of rows) summary[row.outcome === 'refused' ? 'refused' : row.status] += 1;
  return summary;
};

const toReply = (committed: boolean, input: Input, sha256: string, rows: (Row & { values?: DefinitionValues })[]) => ({
  committed,
  sourceSystem: input.sourceSystem,
  sha256,
  summary: summarize(rows),
  rows: rows.map(({ values: _values, ...row }) => row),
});

export async function previewDefinitionsImport(db: Db, principal: Principal, input: Input) {
  const { partnerId } = await importPartner(db, principal, input, false);
  const { records, sha256 } = importRecords(input, maxImportRows);
  const rows = deriveDefinitions(input, partnerId, records, await store.selectPartnerDefinitions(db, partnerId));
  return toReply(false, input, sha256, rows);
}

/**
 * Creates and updates the definitions inside the partner's lock, re-deriving every row there; a row whose status
 * differs from the one echoed from preview (`expected`) is refused. Idempotent: a second run finds every row
 * `unchanged`. Each definition is audited as custom_field.create or .update; one custom_field.import.definitions
 * summary row (on the partner's oldest organization: partner users read every organization's trail) closes the pass.
 */
export async function commitDefinitionsImport(db: Db, principal: Principal, input: Input, audit: AuditContext) {
  const { partnerId } = await importPartner(db, principal, input, false);
  const { records, sha256 } = importRecords(input, maxImportRows);
  const expected = new Map(input.expected?.map((e) => [e.row, e.status]));
  const { rows, changes } = await db.transaction(async (tx) => {
    await store.lockDefinitionsOf(tx, partnerId);
    const before = await store.selectPartnerDefinitions(tx, partnerId);
    const changes: { before?: DefinitionRecord; after: DefinitionRecord }[] = [];
    const rows: (Row & { values?: DefinitionValues })[] = [];
    for (const row of deriveDefinitions(input, partnerId, records, before)) {
      const status = expected.get(row.row);
      // A row previewed as create or update that is now unchanged was applied by an earlier run: a resumed commit.
      const resumed = row.status === 'unchanged' && (status === 'create' || status === 'update');
      if (status !== undefined && status !== row.status && !resumed) {
        rows.push({ ...row, outcome: 'refused', reason: `Changed since preview: now ${row.status}, not ${status}` });
      } else if (row.status === 'create') {
        const after = await insertCheckedDefinition(tx, row.values!);
        changes.push({ after });
        rows.push({ ...row, outcome: 'created', fieldId: after.id });
      } else if (row.status === 'update') {
        const previous = before.find((field) => field.id === row.fieldId)!;
        changes.push({
          before: previous,
          after: await store.updateDefinition(tx, previous.id, { ...previous, ...row.values!, key: previous.key }),
        });
        rows.push({ ...row, outcome: 'updated' });
      } else rows.push({ ...row, outcome: row.status === 'unchanged' ? 'unchanged' : null });
    }
    return { rows, changes };
  });
  for (const change of changes)
    await auditDefinition(db, audit, change.after, change.before ? 'custom_field.update' : 'custom_field.create', () =>
      change.before
        ? { before: snapshot(change.before), after: snapshot(change.after) }
        : { after: snapshot(change.after) },
    );
  const reply = toReply(true, input, sha256, rows);
  const org = await store.selectSummaryOrganization(db, partnerId, undefined);
  if (org)
    writeRouteAudits(audit, [
      {
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
      },
    ]);
  return reply;
}
