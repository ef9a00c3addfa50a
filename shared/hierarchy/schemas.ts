import { z } from 'zod';
import { agentStatuses } from '../agents/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';

const name = z.string().trim().min(1).max(255);
const timestamp = z.iso.datetime({ offset: true });
const listQuery = pageQuery({ defaultLimit: 50, maxLimit: 100 });
const search = z.string().min(1).max(255).optional().meta({ description: 'Case-insensitive substring of the name' });

export const idParams = z.object({ id: z.uuid() });
export const siteParams = z.object({ id: z.uuid(), siteId: z.uuid() });
export const keyParams = z.object({ id: z.uuid(), keyId: z.uuid() });
export const deploymentScriptQuery = z
  .object({
    platform: z
      .enum(['windows', 'macos', 'linux'])
      .meta({ description: 'windows: PowerShell; macos, linux: POSIX sh' }),
  })
  .strict();

export const partner = z
  .object({ id: z.uuid(), name: z.string(), createdAt: timestamp, updatedAt: timestamp })
  .meta({ id: 'Partner' });
export const createPartner = z.object({ name }).strict();
export const listPartnersQuery = z.object({ ...listQuery, search });

export const site = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    name: z.string(),
    timezone: z.string().nullable(),
    address: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Site' });
/** An IANA time zone name: Intl refuses (RangeError) any zone it does not know; offsets such as +01:00 are no zone names. */
function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return !/^[+-]/.test(zone);
  } catch {
    return false;
  }
}
const siteFields = {
  name,
  timezone: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .refine(isTimeZone, 'Unknown time zone; give an IANA name such as Europe/Berlin')
    .optional()
    .meta({ description: 'IANA time zone, e.g. Europe/Berlin' }),
  address: z.string().max(2000).optional(),
};
export const createSite = z.object(siteFields).strict();
export const updateSite = z
  .object({ name: name.optional(), timezone: siteFields.timezone.nullable(), address: siteFields.address.nullable() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');

export const organization = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    name: z.string(),
    externalId: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Organization' });
export const createdOrganization = organization.extend({ site }).meta({ id: 'CreatedOrganization' });
export const createOrganization = z
  .object({
    name,
    externalId: z.string().trim().min(1).max(255).optional(),
    partnerId: z
      .uuid()
      .optional()
      .meta({ description: 'Required for platform administrators; partner users create in their own partner' }),
    site: z
      .object(siteFields)
      .partial({ name: true })
      .strict()
      .optional()
      .meta({ description: 'The first site (default name "Main")' }),
  })
  .strict();
export const updateOrganization = z
  .object({ name: name.optional(), externalId: z.string().trim().min(1).max(255).nullable().optional() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');
export const listOrganizationsQuery = z.object({ ...listQuery, search, partnerId: z.uuid().optional() });

export const device = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid(),
    agentId: z.uuid().nullable(),
    hostname: z.string(),
    displayName: z.string().nullable(),
    osType: z.string().nullable(),
    osVersion: z.string().nullable(),
    agentVersion: z.string().nullable(),
    lastSeenAt: timestamp.nullable(),
    lastIp: z.string().nullable(),
    agentStatus: z
      .enum(agentStatuses)
      .nullable()
      .meta({ description: 'What the agent reported in its last heartbeat that carried a status' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Device' });
export const updateDevice = z
  .object({ displayName: name.nullable().optional(), siteId: z.uuid().optional() })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');
export const listDevicesQuery = z.object({
  ...listQuery,
  orgId: z.uuid().optional(),
  siteId: z.uuid().optional(),
  search: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: 'Case-insensitive substring of hostname or display name' }),
});

export const enrollmentKey = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid().nullable(),
    name: z.string().nullable(),
    keyPrefix: z.string(),
    expiresAt: timestamp.nullable(),
    revokedAt: timestamp.nullable(),
    maxUsage: z.number().int().meta({ description: 'Devices the key enrolls at most' }),
    usageCount: z.number().int().meta({ description: 'Devices it enrolled so far' }),
    createdAt: timestamp,
  })
  .meta({ id: 'EnrollmentKey' });
export const createdEnrollmentKey = enrollmentKey
  .extend({ key: z.string().meta({ description: 'The key itself; shown only in this reply' }) })
  .meta({ id: 'CreatedEnrollmentKey' });
export const createEnrollmentKey = z
  .object({
    siteId: z
      .uuid()
      .optional()
      .meta({ description: "Enroll into this site; without it devices join the organization's first site" }),
    name: name.optional(),
    expiresAt: timestamp
      .optional()
      .refine((t) => t === undefined || Date.parse(t) > Date.now(), 'expiresAt must lie in the future'),
    maxUsage: z.number().int().min(1).max(100_000).default(1).meta({
      description: 'Devices the key may enroll: 1 (default) for a single install, up to 100,000 for a fleet key',
    }),
  })
  .strict();

/** Unknown fields are dropped, not refused: agents of a newer version may report more than this server knows. */
export const enroll = z.object({
  enrollmentKey: z.string().min(1).max(255),
  enrollmentSecret: z.string().max(1024).optional(),
  hostname: z.string().trim().min(1).max(255),
  osType: z.string().trim().min(1).max(50).optional(),
  osVersion: z.string().trim().min(1).max(255).optional(),
  agentVersion: z.string().trim().min(1).max(50).optional(),
});
export const enrolled = z
  .object({
    agentId: z.uuid(),
    deviceId: z.uuid(),
    siteId: z.uuid().meta({ description: "The site the device joined: the key's, or the organization's first" }),
    token: z.string().meta({ description: "The agent's bearer token; shown only in this reply" }),
  })
  .meta({ id: 'Enrollment' });

export const partnerPage = pageOf(partner);
export const organizationPage = pageOf(organization);
export const sitePage = pageOf(site);
export const devicePage = pageOf(device);
export const enrollmentKeyPage = pageOf(enrollmentKey);
export const pageOnlyQuery = z.object(listQuery);
