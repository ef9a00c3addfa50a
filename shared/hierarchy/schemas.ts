import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { instant } from '../instants.ts';
import { atLeastOneField, nameText } from '../request-values.ts';

/** What an agent may report about itself in its heartbeat; a device shows its agent's last. */
export const agentStatuses = ['online', 'degraded', 'maintenance'] as const;
/** What a device is for, as its agent reports it. */
export const deviceRoles = ['workstation', 'server'] as const;
export type AgentStatus = (typeof agentStatuses)[number];

const name = nameText(255);
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
  .object({ id: z.uuid(), name: z.string(), createdAt: timestampReply, updatedAt: timestampReply })
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
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .meta({ id: 'Site' });
/**
 * An IANA time zone name in its canonical spelling (`europe/berlin` is `Europe/Berlin`), or undefined: Intl refuses
 * (RangeError) any zone it does not know; offsets such as +01:00 are no zone names.
 */
export function canonicalTimeZone(zone: string): string | undefined {
  if (/^[+-]/.test(zone)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}
const siteFields = {
  name,
  timezone: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .transform((zone, ctx) => {
      const canonical = canonicalTimeZone(zone);
      if (!canonical)
        ctx.addIssue({ code: 'custom', message: 'Unknown time zone; give an IANA name such as Europe/Berlin' });
      return canonical ?? zone;
    })
    .optional()
    .meta({ description: 'IANA time zone, e.g. Europe/Berlin' }),
  address: z.string().max(2000).optional(),
};
export const createSite = z.object(siteFields).strict();
export const updateSite = atLeastOneField(
  z
    .object({ name: name.optional(), timezone: siteFields.timezone.nullable(), address: siteFields.address.nullable() })
    .strict(),
);

export const organization = z
  .object({
    id: z.uuid(),
    partnerId: z.uuid(),
    name: z.string(),
    externalId: z.string().nullable(),
    createdAt: timestampReply,
    updatedAt: timestampReply,
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
export const updateOrganization = atLeastOneField(
  z.object({ name: name.optional(), externalId: z.string().trim().min(1).max(255).nullable().optional() }).strict(),
);
export const listOrganizationsQuery = z.object({ ...listQuery, search, partnerId: z.uuid().optional() });

export const device = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid(),
    agentId: z.uuid().nullable(),
    hostname: z.string(),
    displayName: z.string().nullable(),
    serialNumber: z.string().nullable(),
    osType: z.string().nullable(),
    osVersion: z.string().nullable(),
    role: z
      .enum(deviceRoles)
      .nullable()
      .meta({ description: 'workstation or server, as the agent reports it; policy assignments narrow by it' }),
    agentVersion: z.string().nullable(),
    lastSeenAt: timestampReply.nullable().meta({
      description:
        'When the agent was last heard from: its last heartbeat, or when its WebSocket connection opened or closed',
    }),
    online: z.boolean().meta({
      description: 'The agent holds a live WebSocket connection, or was seen within the last 5 minutes',
    }),
    lastIp: z.string().nullable(),
    agentStatus: z
      .enum(agentStatuses)
      .nullable()
      .meta({ description: 'What the agent reported in its last heartbeat that carried a status' }),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .meta({ id: 'Device' });
export const updateDevice = atLeastOneField(
  z.object({ displayName: name.nullable().optional(), siteId: z.uuid().optional() }).strict(),
);
/** `cf.<key>` query parameters filter devices by a custom field's value: the one family of names beyond the listed ones. */
export const customFieldParam = /^cf\.([a-z][a-z0-9_]{0,63})$/;
const listDevicesFields = {
  ...listQuery,
  orgId: z.uuid().optional(),
  siteId: z.uuid().optional(),
  search: z
    .string()
    .min(1)
    .max(255)
    .optional()
    .meta({ description: 'Case-insensitive substring of hostname or display name' }),
};
export const listDevicesQuery = z.object(listDevicesFields).catchall(
  z.string().max(10_000).meta({
    description:
      'cf.<key>=<value>: devices whose custom field <key> holds <value> (a scalar in its text form, or one choice of a multi-select); any other name is refused',
    // The names this catchall takes; shared/http/validate.ts refuses any other as an unknown parameter.
    keyPattern: customFieldParam.source,
  }),
);

export const enrollmentKey = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid().nullable(),
    name: z.string().nullable(),
    keyPrefix: z.string(),
    expiresAt: timestampReply.nullable(),
    revokedAt: timestampReply.nullable(),
    maxUsage: z.number().int().meta({ description: 'Devices the key enrolls at most' }),
    usageCount: z.number().int().meta({ description: 'Devices it enrolled so far' }),
    createdAt: timestampReply,
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
    expiresAt: instant()
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
  serialNumber: z.string().max(255).optional().meta({
    description:
      'The machine serial number; placeholders ("To be filled by O.E.M.", "Default string", "0" …) are not stored',
  }),
  osType: z.string().trim().min(1).max(50).optional(),
  osVersion: z.string().trim().min(1).max(255).optional(),
  agentVersion: z.string().trim().min(1).max(50).optional(),
  role: z.enum(deviceRoles).optional().meta({ description: 'workstation or server' }),
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
export type OrganizationPage = z.output<typeof organizationPage>;
export const sitePage = pageOf(site);
export const devicePage = pageOf(device);
export const enrollmentKeyPage = pageOf(enrollmentKey);
export const pageOnlyQuery = z.object(listQuery);
