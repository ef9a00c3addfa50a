import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { device } from '../hierarchy/schemas.ts';
import { importRow, importRowAcknowledgement, importSummary, rowNumber } from '../imports/schemas.ts';
import { nameText } from '../request-values.ts';

/** The value types of a custom field: text up to 10,000 characters, and what an MSP's fields hold. */
export const fieldTypes = ['text', 'number', 'boolean', 'date', 'dropdown', 'multi-select', 'url'] as const;
export type FieldType = (typeof fieldTypes)[number];
export const fieldScopes = ['device'] as const;
export const maxTextLength = 10_000;
export const maxUrlLength = 2048;

export const fieldKey = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'A key starts with a lowercase letter and holds lowercase letters, digits and _')
  .max(64);

/** A stored value: a string (text, date, dropdown, url), a number, a boolean, or the choices of a multi-select. */
export const fieldValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
export type FieldValue = z.infer<typeof fieldValue>;

const choice = z.string().trim().min(1).max(255);
const definitionFields = {
  name: nameText(100),
  choices: z
    .array(choice)
    .min(1)
    .max(500)
    .refine((choices) => new Set(choices).size === choices.length, 'Each choice at most once')
    .meta({ description: 'The allowed values of a dropdown or multi-select' }),
  min: z.number().meta({ description: 'Smallest allowed number (number fields)' }),
  max: z.number().meta({ description: 'Largest allowed number (number fields)' }),
  required: z
    .boolean()
    .meta({ description: "A device's value cannot be cleared, and an import cannot leave it blank" }),
  defaultValue: fieldValue.meta({ description: 'Shown in customFields of a device without a stored value' }),
  description: z.string().trim().max(2000),
  osTypes: z
    .array(z.string().trim().min(1).max(50))
    .min(1)
    .max(20)
    .meta({ description: 'The device osType values the field applies to; without it, every device' }),
  scriptWritable: z
    .boolean()
    .meta({ description: 'Scripts on the device may set it through PUT /agents/{id}/custom-fields/{key}' }),
  sourceSystem: z.string().trim().min(1).max(100),
  externalId: z.string().trim().min(1).max(255),
};

export const createDefinition = z
  .object({
    orgId: z.uuid().optional().meta({ description: 'The owning organization; without it the field is partner-wide' }),
    partnerId: z
      .uuid()
      .optional()
      .meta({ description: 'Platform administrators name the partner of a partner-wide field' }),
    key: fieldKey,
    type: z.enum(fieldTypes),
    scope: z.enum(fieldScopes).default('device'),
    name: definitionFields.name,
    choices: definitionFields.choices.optional(),
    min: definitionFields.min.optional(),
    max: definitionFields.max.optional(),
    required: definitionFields.required.default(false),
    defaultValue: definitionFields.defaultValue.optional(),
    description: definitionFields.description.optional(),
    osTypes: definitionFields.osTypes.optional(),
    scriptWritable: definitionFields.scriptWritable.default(false),
    sourceSystem: definitionFields.sourceSystem.optional(),
    externalId: definitionFields.externalId.optional(),
  })
  .strict();

export const updateDefinition = z
  .object({
    name: definitionFields.name.optional(),
    type: z.enum(fieldTypes).optional().meta({ description: 'Refused with 409 while the field has values' }),
    choices: definitionFields.choices.nullable().optional(),
    min: definitionFields.min.nullable().optional(),
    max: definitionFields.max.nullable().optional(),
    required: definitionFields.required.optional(),
    defaultValue: definitionFields.defaultValue.nullable().optional(),
    description: definitionFields.description.nullable().optional(),
    osTypes: definitionFields.osTypes.nullable().optional(),
    scriptWritable: definitionFields.scriptWritable.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');

export const definition = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z
      .uuid()
      .nullable()
      .meta({ description: 'null: partner-wide, visible to every organization of the partner' }),
    scope: z.enum(fieldScopes),
    key: z.string(),
    name: z.string(),
    type: z.enum(fieldTypes),
    choices: z.array(z.string()).nullable(),
    min: z.number().nullable(),
    max: z.number().nullable(),
    required: z.boolean(),
    defaultValue: fieldValue.nullable(),
    description: z.string().nullable(),
    osTypes: z.array(z.string()).nullable(),
    scriptWritable: z.boolean(),
    sourceSystem: z.string().nullable(),
    externalId: z.string().nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'CustomFieldDefinition' });

export const definitionPage = pageOf(definition);
export const listDefinitionsQuery = z.object({
  ...pageQuery({ defaultLimit: 100, maxLimit: 500 }),
  orgId: z
    .uuid()
    .optional()
    .meta({ description: "The definitions an organization's devices see: its own and its partner's" }),
  key: fieldKey.optional(),
});
export const fieldParams = z.object({ fieldId: z.uuid() });
export const deleteDefinitionQuery = z.object({
  force: z
    .enum(['true', 'false'])
    .optional()
    .transform((force) => force === 'true')
    .meta({ description: 'Required (true) when values exist: they are deleted with the definition' }),
});

export const deviceFieldParams = z.object({ id: z.uuid(), key: fieldKey });
export const putValue = z.object({ value: fieldValue }).strict();
export const deviceFieldValue = z
  .object({ deviceId: z.uuid(), fieldId: z.uuid(), key: z.string(), type: z.enum(fieldTypes), value: fieldValue })
  .strict()
  .meta({ id: 'CustomFieldValue' });

/** PUT /custom-fields/{fieldId}/values: at most this many devices per call (one transaction, well within 30 s). */
export const maxBulkValues = 1000;
export const bulkValues = z
  .object({
    values: z
      .array(
        z
          .object({
            deviceId: z.uuid(),
            value: fieldValue.nullable().meta({ description: "The device's new value; null clears it" }),
          })
          .strict(),
      )
      .min(1)
      .max(maxBulkValues)
      .meta({ description: `One item per device, at most ${maxBulkValues.toLocaleString('en')}, each device once` }),
  })
  .strict();
export const bulkValuesReply = z
  .object({
    fieldId: z.uuid(),
    key: z.string(),
    type: z.enum(fieldTypes),
    changed: z.number().int().meta({ description: 'Devices whose value changed (each audited as device.update)' }),
    unchanged: z.number().int().meta({ description: 'Devices that already held the value: nothing written' }),
    values: z.array(z.object({ deviceId: z.uuid(), value: fieldValue.nullable(), changed: z.boolean() }).strict()),
  })
  .strict();

/** GET /devices/{id}: the device with its custom fields. */
export const deviceDetail = device
  .extend({
    customFields: z
      .record(z.string(), fieldValue)
      .meta({ description: 'key → value of every field with a value (or a default) on the device' }),
    customFieldDetails: z.array(
      z
        .object({
          key: z.string(),
          fieldId: z.uuid(),
          type: z.enum(fieldTypes),
          value: fieldValue,
          source: z
            .enum(['value', 'default'])
            .meta({ description: "default: no value stored, the field's defaultValue" }),
        })
        .strict(),
    ),
  })
  .meta({ id: 'DeviceDetail' });
export const agentFieldParams = z.object({
  id: z.uuid().meta({ description: 'The agent id (enrollment reply agentId); only the agent itself may use it' }),
  key: fieldKey,
});

/** The other RMMs whose exports the import wizard reads (docs/custom-fields.md "What the exports look like"). */
export const sourceSystems = ['datto-rmm', 'ninjaone', 'connectwise-automate', 'generic'] as const;
export const maxImportRows = 10_000;

const importInput = {
  sourceSystem: z.enum(sourceSystems),
  rows: z
    .array(z.record(z.string(), z.unknown()))
    .min(1)
    .max(maxImportRows)
    .optional()
    .meta({ description: 'JSON rows, one per field (definitions) or per device (values)' }),
  csv: z
    .string()
    .min(1)
    .optional()
    .meta({ description: `RFC 4180 CSV with a header row; up to ${maxImportRows.toLocaleString('en')} data rows` }),
  fileName: z.string().trim().min(1).max(255).optional().meta({ description: 'Named in the summary audit row' }),
};
const oneSource = (body: { rows?: unknown; csv?: unknown }) => (body.rows === undefined) !== (body.csv === undefined);
const oneSourceMessage = { message: 'Give either rows or csv', path: ['rows'] };

export const definitionsImport = z
  .object({
    ...importInput,
    partnerId: z.uuid().optional().meta({ description: 'Platform administrators name the partner' }),
    acknowledgements: z
      .array(importRowAcknowledgement.extend({ row: rowNumber }).strict())
      .max(maxImportRows)
      .optional()
      .meta({
        description:
          "Commit: each row's annotation at preview, by row number; a row whose annotation changed since is refused",
      }),
  })
  .strict()
  .refine(oneSource, oneSourceMessage);

/** A count for every status: an object with each status a property, as the document lists it. */
const countsOf = <const S extends string>(statuses: readonly S[]) =>
  z.object(Object.fromEntries(statuses.map((status) => [status, z.number().int()])) as Record<S, z.ZodNumber>).strict();

export const definitionsImportReply = z
  .object({
    committed: z.boolean(),
    sourceSystem: z.enum(sourceSystems),
    sha256: z.string(),
    summary: importSummary,
    rows: z.array(
      importRow
        .extend({
          name: z.string().nullable(),
          key: z.string().nullable().meta({ description: 'The proposed key' }),
          type: z.enum(fieldTypes).nullable().meta({ description: 'The proposed type' }),
          choices: z.array(z.string()).nullable(),
          fieldId: z.uuid().optional().meta({ description: 'The definition created, updated or collided with' }),
        })
        .strict(),
    ),
  })
  .strict();

export const valueStatuses = ['set', 'unchanged', 'invalid', 'no-device', 'ambiguous', 'no-definition'] as const;
export type ValueStatus = (typeof valueStatuses)[number];
const columnRole = z.union([
  z.enum(['hostname', 'serialNumber', 'deviceExternalId']),
  z.string().regex(/^field:[a-z][a-z0-9_]*$/, 'field:<key>'),
]);

/**
 * A file larger than one request is committed as several requests of one pass: the pass's one summary audit row is
 * written by the request that completes the file (docs/custom-fields.md "Audit trail").
 */
const importPass = z
  .object({
    id: z.uuid().meta({ description: 'Chosen by the client; the same for every request of the file' }),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'A SHA-256 as 64 lowercase hexadecimal digits')
      .meta({ description: 'SHA-256 of the whole file as the client read it' }),
    rows: z.number().int().min(1).max(10_000_000).meta({ description: 'Data rows of the whole file' }),
    firstRow: z.number().int().min(0).meta({ description: "Index in the file of this request's first row" }),
  })
  .strict()
  .meta({ description: 'Commit only: this request is the part of a file starting at firstRow' });
export const passReply = z
  .object({
    id: z.uuid(),
    rows: z.number().int().meta({ description: 'Data rows of the whole file' }),
    rowsCommitted: z.number().int().meta({ description: 'Rows of the file committed so far, by every request' }),
    closed: z.boolean().meta({ description: 'Every row of the file is committed and the summary row written' }),
    summaryWritten: z.boolean().meta({ description: 'This request completed the file and wrote the summary row' }),
  })
  .strict();

export const valuesImport = z
  .object({
    ...importInput,
    orgId: z.uuid().optional().meta({ description: 'Resolve hostnames within this organization only' }),
    partnerId: z.uuid().optional().meta({ description: 'Platform administrators name the partner' }),
    mapping: z.record(z.string().min(1).max(255), columnRole).optional().meta({
      description:
        'column → hostname | serialNumber | deviceExternalId | field:<key>; without it, headers with those names or a definition key (or its name, or its externalId) map themselves',
    }),
    pass: importPass.optional(),
    expected: z
      .array(z.object({ row: rowNumber, digest: z.string().max(64) }).strict())
      .max(maxImportRows)
      .optional()
      .meta({ description: "Commit: each row's digest at preview; a row whose derivation changed since is refused" }),
  })
  .strict()
  .refine(oneSource, oneSourceMessage);

export const valuesImportReply = z
  .object({
    committed: z.boolean(),
    sourceSystem: z.enum(sourceSystems),
    sha256: z.string(),
    columns: z
      .record(z.string(), columnRole.nullable())
      .meta({ description: 'How each column was read (null: ignored)' }),
    pass: passReply.optional(),
    summary: countsOf([...valueStatuses, 'refused']).meta({
      description:
        'Counts of values by status (no-device and ambiguous count the row once); refused: rows changed since preview',
    }),
    rows: z.array(
      importRow
        .omit({ issues: true })
        .extend({
          externalId: z.string().optional().meta({ description: "The device's id in the other RMM, as given" }),
          deviceId: z.uuid().nullable(),
          resolvedBy: z.enum(['deviceExternalId', 'serialNumber', 'hostname']).nullable(),
          digest: z.string().meta({ description: 'Echo it at commit (expected) to refuse the row if it changed' }),
          fields: z.array(
            z
              .object({
                column: z.string(),
                key: z.string(),
                status: z.enum(valueStatuses),
                value: fieldValue.nullable(),
                reason: z.string().optional(),
              })
              .strict(),
          ),
        })
        .strict(),
    ),
  })
  .strict();

/** The replies as the import wizard page reads them (web/src/custom-fields-import). */
export type DefinitionsImportReply = z.output<typeof definitionsImportReply>;
export type ValuesImportReply = z.output<typeof valuesImportReply>;
export type CustomFieldDefinitionPage = z.output<typeof definitionPage>;
