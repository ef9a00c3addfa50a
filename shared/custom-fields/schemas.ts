import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { device } from '../hierarchy/schemas.ts';

const timestamp = z.iso.datetime({ offset: true });

/** The value types of a custom field (issue 16): text up to 10,000 characters, and what an MSP's fields hold. */
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
  name: z.string().trim().min(1).max(100),
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
    createdAt: timestamp,
    updatedAt: timestamp,
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

/** GET /devices/{id}: the device with its custom fields (issue 16). */
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
