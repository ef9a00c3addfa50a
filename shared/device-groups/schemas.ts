import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { device } from '../hierarchy/schemas.ts';
import { importReply, importRowAcknowledgement } from '../imports/schemas.ts';
import { nameText } from '../request-values.ts';
import { type DeviceFilter, filterIssues, maxFilterConditions, maxFilterDepth, operatorNames } from './filter.ts';
import { filterFields } from './filter-fields.ts';

const name = nameText(255);

/** The filter language's JSON Schema for the OpenAPI document (the checks themselves are filterIssues). */
const filterJsonSchema = ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
  const node = { $ref: '#/components/schemas/DeviceFilter' };
  for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
  Object.assign(jsonSchema, {
    oneOf: [
      { type: 'object', properties: { all: { type: 'array', items: node, minItems: 1 } }, required: ['all'] },
      { type: 'object', properties: { any: { type: 'array', items: node, minItems: 1 } }, required: ['any'] },
      { type: 'object', properties: { not: node }, required: ['not'] },
      {
        type: 'object',
        properties: {
          field: { type: 'string', enum: Object.keys(filterFields) },
          op: { type: 'string', enum: operatorNames },
          value: {},
        },
        required: ['field', 'op', 'value'],
      },
    ],
  });
};

/**
 * A dynamic group's filter (docs/device-groups.md): every fault is a 400 naming its path under the filter, for
 * example `body.filter.all.1.op`.
 */
export const deviceFilter = z
  .unknown()
  .superRefine((value, ctx) => {
    for (const issue of filterIssues(value)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  })
  .transform((value) => value as DeviceFilter)
  .meta({
    id: 'DeviceFilter',
    description: `{ all: [...] } | { any: [...] } | { not: … } | { field, op, value }; at most ${maxFilterDepth} levels and ${maxFilterConditions} conditions`,
    override: filterJsonSchema,
  });

export const groupTypes = ['static', 'dynamic'] as const;

export const deviceGroup = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid().nullable(),
    parentId: z.uuid().nullable(),
    name: z.string(),
    type: z.enum(groupTypes),
    filter: z.unknown().nullable().meta({ description: 'The filter of a dynamic group; null for a static group' }),
    sourceSystem: z.string().nullable(),
    externalId: z.string().nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .meta({ id: 'DeviceGroup' });

export const createDeviceGroup = z
  .object({
    name,
    type: z.enum(groupTypes),
    siteId: z.uuid().optional().meta({ description: 'Narrow the group to one site of the organization' }),
    parentId: z.uuid().optional().meta({ description: 'A group of the same organization to nest under' }),
    filter: deviceFilter.optional().meta({ description: 'Required for a dynamic group, refused for a static one' }),
  })
  .strict();

export const updateDeviceGroup = z
  .object({
    name: name.optional(),
    siteId: z.uuid().nullable().optional(),
    parentId: z.uuid().nullable().optional(),
    filter: deviceFilter.optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');

export const groupParams = z.object({ groupId: z.uuid() });
export const orgParams = z.object({ id: z.uuid() });

const listQuery = pageQuery({ defaultLimit: 50, maxLimit: 100 });
export const listGroupsQuery = z.object({
  ...listQuery,
  search: z.string().min(1).max(255).optional().meta({ description: 'Case-insensitive substring of the name' }),
  type: z.enum(groupTypes).optional(),
});
export const pageOnlyQuery = z.object(listQuery);
export const memberSorts = ['newest', 'hostname'] as const;
export const membersQuery = z.object({
  ...listQuery,
  sort: z
    .enum(memberSorts)
    .default('newest')
    .meta({ description: 'newest: static members by when they were added, dynamic ones by enrollment; or hostname' }),
});

export const previewBody = z
  .object({
    filter: deviceFilter,
    siteId: z.uuid().optional().meta({ description: 'Preview as a group narrowed to this site' }),
  })
  .strict();

export const memberIds = z
  .object({ deviceIds: z.array(z.uuid()).min(1).max(1000).meta({ description: '1 to 1,000 device ids' }) })
  .strict();

const refusedDevice = z.object({
  deviceId: z.uuid(),
  code: z.enum(['NOT_FOUND', 'OUTSIDE_SITE']),
  message: z.string(),
});
export const membersAdded = z
  .object({
    added: z.number().int(),
    skipped: z.number().int().meta({ description: 'Ids already members (or named twice)' }),
    refused: z.array(refusedDevice),
  })
  .meta({ id: 'DeviceGroupMembersAdded' });
export const membersRemoved = z
  .object({
    removed: z.number().int(),
    skipped: z.number().int().meta({ description: 'Ids of devices that were not members (or named twice)' }),
    refused: z.array(refusedDevice),
  })
  .meta({ id: 'DeviceGroupMembersRemoved' });

export const groupImport = z
  .object({
    groups: z
      .array(
        z
          .object({
            externalId: z.string().trim().min(1).max(255),
            sourceSystem: z.string().trim().min(1).max(100),
            name,
            filter: z
              .unknown()
              .meta({ description: 'A DeviceFilter; one that does not check is reported for its row' }),
            acknowledge: importRowAcknowledgement.optional(),
          })
          .strict(),
      )
      .min(1)
      .max(500),
  })
  .strict();
export const groupImportReply = importReply(
  z.object({ groupId: z.uuid().optional().meta({ description: 'The group the row created, updated or matches' }) }),
).meta({ id: 'DeviceGroupImport' });

export const deviceGroupPage = pageOf(deviceGroup);
export const memberPage = pageOf(device);

/** POST /orgs/organizations/{id}/device-summaries: the devices of one page of a list. */
export const summariesBody = z
  .object({
    deviceIds: z
      .array(z.uuid())
      .min(1)
      .max(100)
      .meta({ description: '1 to 100 device ids of the organization (a page of GET /devices or of a preview)' }),
  })
  .strict();
export const deviceSummaries = z
  .object({
    data: z.array(
      z
        .object({
          deviceId: z.uuid(),
          openAlerts: z
            .number()
            .int()
            .nullable()
            .meta({ description: "The device's alerts with status open; null without alerts:read" }),
          groups: z.array(z.object({ id: z.uuid(), name: z.string(), type: z.enum(groupTypes) }).strict()),
          customFields: z
            .record(z.string(), z.unknown())
            .meta({ description: 'As GET /devices/{id} answers them: stored values, else defaults that apply' }),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'DeviceSummaries' });
