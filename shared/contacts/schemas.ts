import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { importReply, importRowAcknowledgement, rowNumber } from '../imports/schemas.ts';
import { nameText } from '../request-values.ts';

export const contactRoles = ['primary', 'billing', 'technical', 'emergency'] as const;
export type ContactRole = (typeof contactRoles)[number];

/** The fields of a contact a caller writes, each bounded as its column is (0026). */
export const contactFields = {
  name: nameText(255),
  email: z.string().trim().max(255).pipe(z.email()),
  phone: z.string().trim().min(1).max(50),
  title: z.string().trim().min(1).max(255),
  roles: z
    .array(z.preprocess((role) => (typeof role === 'string' ? role.trim().toLowerCase() : role), z.enum(contactRoles)))
    .max(contactRoles.length)
    .refine((roles) => new Set(roles).size === roles.length, 'Each role at most once'),
  notes: z.string().max(4000),
  siteId: z.uuid().meta({ description: 'Pin the contact to one site of its organization' }),
  sourceSystem: z.string().trim().min(1).max(100),
  externalId: z.string().trim().min(1).max(255),
};
export type ContactField = keyof typeof contactFields;

const bothOrNeither = (body: { sourceSystem?: string | null; externalId?: string | null }) =>
  (body.sourceSystem == null) === (body.externalId == null);
const keyMessage = { message: 'externalId and sourceSystem go together', path: ['externalId'] };

export const contact = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid().nullable(),
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    title: z.string().nullable(),
    roles: z.array(z.enum(contactRoles)),
    notes: z.string().nullable(),
    sourceSystem: z.string().nullable(),
    externalId: z.string().nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .meta({ id: 'Contact' });

export const createContact = z
  .object({
    name: contactFields.name,
    email: contactFields.email.optional(),
    phone: contactFields.phone.optional(),
    title: contactFields.title.optional(),
    roles: contactFields.roles.default([]),
    notes: contactFields.notes.optional(),
    siteId: contactFields.siteId.optional(),
    sourceSystem: contactFields.sourceSystem.optional(),
    externalId: contactFields.externalId.optional(),
  })
  .strict()
  .refine(bothOrNeither, keyMessage);

export const updateContact = z
  .object({
    name: contactFields.name.optional(),
    email: contactFields.email.nullable().optional(),
    phone: contactFields.phone.nullable().optional(),
    title: contactFields.title.nullable().optional(),
    roles: contactFields.roles.optional(),
    notes: contactFields.notes.nullable().optional(),
    siteId: contactFields.siteId.nullable().optional(),
    sourceSystem: contactFields.sourceSystem.nullable().optional(),
    externalId: contactFields.externalId.nullable().optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change')
  .refine((body) => !('externalId' in body || 'sourceSystem' in body) || bothOrNeither(body), keyMessage);

export const contactParams = z.object({ contactId: z.uuid() });
export const orgParams = z.object({ id: z.uuid() });
export const listContactsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 100 }),
  search: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: 'Case-insensitive substring of the name or e-mail' }),
  siteId: z.uuid().optional(),
});

/** A held row's acknowledgement: link to the matched contact (contactId) or, without it, create a new one. */
export const contactAcknowledgement = importRowAcknowledgement.extend({
  contactId: z
    .uuid()
    .optional()
    .meta({ description: 'Link the row to this matched contact; omit to create a new one' }),
});

/** One imported row as given; each is checked on its own (a bad row is reported `invalid`, never a 400). */
export const contactRow = z
  .object({
    name: contactFields.name,
    email: contactFields.email.optional(),
    phone: contactFields.phone.optional(),
    title: contactFields.title.optional(),
    roles: contactFields.roles.optional(),
    notes: contactFields.notes.optional(),
    siteId: contactFields.siteId.optional(),
    sourceSystem: contactFields.sourceSystem.optional(),
    externalId: contactFields.externalId.optional(),
    acknowledge: contactAcknowledgement.optional(),
  })
  .strict();
export type ContactRow = z.output<typeof contactRow>;

export const importableFields = [
  'name',
  'email',
  'phone',
  'title',
  'roles',
  'notes',
  'siteId',
  'sourceSystem',
  'externalId',
] as const satisfies readonly ContactField[];

export const contactImport = z
  .object({
    rows: z.array(z.record(z.string(), z.unknown())).min(1).max(1000).optional().meta({
      description: 'Up to 1,000 contacts: name, email, phone, title, roles, notes, siteId, sourceSystem, externalId',
    }),
    csv: z.string().min(1).optional().meta({
      description:
        'RFC 4180 CSV with a header row; up to 1,000 data rows, blank cells absent. Roles separated by ; or |',
    }),
    mapping: z.partialRecord(z.enum(importableFields), z.string().min(1).max(255)).optional().meta({
      description:
        'CSV only: field → header of its column. Without it a column is read when its header is the field name (case, spaces, - and _ ignored)',
    }),
    sourceSystem: contactFields.sourceSystem
      .optional()
      .meta({ description: 'The sourceSystem of rows that carry an externalId but no sourceSystem' }),
    acknowledgements: z
      .array(contactAcknowledgement.extend({ row: rowNumber }))
      .max(1000)
      .optional()
      .meta({ description: 'Acknowledgements by row number, from 1 (JSON rows may also carry their own acknowledge)' }),
  })
  .strict()
  .refine((body) => (body.rows === undefined) !== (body.csv === undefined), {
    message: 'Give either rows or csv',
    path: ['rows'],
  })
  .refine((body) => body.mapping === undefined || body.csv !== undefined, {
    message: 'mapping applies to csv only',
    path: ['mapping'],
  });

export const contactImportReply = importReply(
  z.object({
    contactId: z
      .uuid()
      .optional()
      .meta({ description: 'The contact the row created, updated, leaves unchanged or matches' }),
    match: z
      .object({
        contactId: z.uuid(),
        name: z.string(),
        email: z.string().nullable(),
        similarity: z.number().optional(),
      })
      .optional()
      .meta({ description: 'The contact a held row matches fuzzily' }),
  }),
).meta({ id: 'ContactImport' });

export const contactPage = pageOf(contact);
