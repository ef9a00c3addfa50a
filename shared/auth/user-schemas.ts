import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { atLeastOneField, nameText, optionalParam } from '../request-values.ts';

/** The roles a user record may hold: a partner's or one organization's (a platform administrator has none). */
export const userRecordRoles = [
  'partner_admin',
  'partner_technician',
  'org_admin',
  'org_technician',
  'org_viewer',
] as const;
export type UserRecordRole = (typeof userRecordRoles)[number];

/** Whether the role belongs to one organization (org_…) rather than to the whole partner. */
export const isOrganizationRole = (role: UserRecordRole) => role.startsWith('org_');

const email = z
  .email()
  .max(254)
  .transform((address) => address.toLowerCase())
  .meta({ description: 'Signs in as this person; one live user per address, compared case-insensitively' });

export const user = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    orgId: z
      .uuid()
      .nullable()
      .meta({ description: 'The organization of an organization role; null for partner roles' }),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(userRecordRoles),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .meta({ id: 'User' });
export type UserRow = z.input<typeof user>;

export const createUser = z
  .object({
    email,
    name: nameText(255).optional(),
    role: z.enum(userRecordRoles),
    orgId: z.uuid().optional().meta({ description: 'Required for an organization role; absent for a partner role' }),
    partnerId: z.uuid().optional().meta({ description: "Platform administrators only: the user's partner" }),
  })
  .strict()
  .meta({ id: 'UserCreation' });

/** A change of what the user may do: the role, and the organization an organization role belongs to. */
export const changeUser = atLeastOneField(
  z
    .object({
      role: z.enum(userRecordRoles).optional(),
      orgId: z
        .uuid()
        .nullable()
        .optional()
        .meta({ description: 'The organization of an organization role; null (or absent) with a partner role' }),
    })
    .strict(),
).meta({ id: 'UserChange' });

export const userParams = z.object({ id: z.uuid().meta({ description: 'The user id' }) });

export const usersQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 500 }),
  orgId: optionalParam(z.uuid()).meta({ description: "The organization's users" }),
  email: optionalParam(z.string().max(254)).meta({ description: 'Exact e-mail address, case-insensitively' }),
});

export const userPage = pageOf(user);
