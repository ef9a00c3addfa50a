import { z } from 'zod';
import { agentTimestamp, storableText } from '../agents/schemas.ts';
import { pageOf, pageQuery, paginationSchema } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import {
  installOutcomes,
  patchCategories,
  patchSeverities,
  patchSources,
  patchStates,
  rebootPolicies,
} from '../policies/patch-vocabulary.ts';
import { optionalParam } from '../request-values.ts';

const text = (max: number) => storableText({ min: 1, max });

/** PUT /agents/{id}/patch-inventory: a complete scan of one source; what it does not list is gone. */
export const inventoryUpload = z
  .object({
    scanId: text(255),
    scannedAt: agentTimestamp(),
    source: z.enum(patchSources),
    items: z
      .array(
        z
          .object({
            externalId: text(255),
            kb: text(50).nullish(),
            title: text(1000),
            vendor: text(255).nullish(),
            product: text(255).nullish(),
            severity: text(50).nullish().meta({ description: "The vendor's severity, normalised (High → important)" }),
            category: text(255)
              .nullish()
              .meta({ description: "The vendor's category, normalised (Security Updates → security)" }),
            releaseDate: agentTimestamp().nullish(),
            requiresReboot: z.boolean().default(false),
            supersedes: z.array(text(255)).max(200).nullish(),
            cves: z.array(text(50)).max(500).nullish(),
            state: z.enum(patchStates),
          })
          .strict(),
      )
      .max(5_000)
      .superRefine((items, ctx) => {
        const seen = new Set<string>();
        items.forEach((item, index) => {
          if (seen.has(item.externalId))
            ctx.addIssue({ code: 'custom', path: [index, 'externalId'], message: 'Listed twice in this scan' });
          seen.add(item.externalId);
        });
      }),
  })
  .strict()
  .meta({ id: 'PatchInventory' });
export type InventoryUpload = z.output<typeof inventoryUpload>;

export const inventoryReceipt = z
  .object({
    deviceId: z.uuid(),
    scanId: z.string(),
    source: z.enum(patchSources),
    scannedAt: timestampReply,
    applied: z.boolean().meta({ description: 'false: a newer scan of this source was stored already' }),
    items: z.number().int(),
    removed: z.number().int().meta({ description: 'Patches the previous scan listed and this one does not' }),
  })
  .strict()
  .meta({ id: 'PatchInventoryReceipt' });

/** An object of whole-number counts by name. */
const countOf = <const K extends string>(names: readonly K[]) =>
  Object.fromEntries(names.map((name) => [name, z.number().int()])) as Record<K, z.ZodNumber>;
const counts = z.object(countOf(['missing', 'installed', 'failed', 'pendingReboot'])).strict();

export const decision = z
  .object({
    id: z.uuid(),
    patchId: z.uuid(),
    orgId: z.uuid().nullable(),
    ringId: z.uuid().nullable(),
    decision: z.enum(['approved', 'declined', 'deferred']),
    until: timestampReply.nullable(),
    decidedBy: z.record(z.string(), z.unknown()).nullable(),
    decidedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'PatchDecision' });

const patchFields = {
  id: z.uuid(),
  source: z.enum(patchSources),
  externalId: z.string(),
  kb: z.string().nullable(),
  title: z.string(),
  vendor: z.string().nullable(),
  product: z.string().nullable(),
  severity: z.enum(patchSeverities),
  category: z.enum(patchCategories),
  vendorCategory: z.string().nullable(),
  releaseDate: timestampReply.nullable(),
  firstSeenAt: timestampReply,
  requiresReboot: z.boolean(),
  supersedes: z.array(z.string()).nullable(),
  cves: z.array(z.string()).nullable(),
  counts: counts.meta({ description: 'Devices (in reach, or of orgId) whose latest scan lists it, by state' }),
};
export const patch = z.object(patchFields).strict().meta({ id: 'Patch' });
export const patchPage = pageOf(patch).meta({ id: 'PatchPage' });
export const patchDetail = z
  .object({ ...patchFields, decisions: z.array(decision) })
  .strict()
  .meta({ id: 'PatchDetail' });

export const listPatchesQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 500 }),
  orgId: optionalParam(z.uuid()).meta({ description: "Counts of this organization's devices only" }),
  severity: optionalParam(z.enum(patchSeverities)),
  category: optionalParam(z.enum(patchCategories)),
  state: optionalParam(z.enum(patchStates)).meta({ description: 'Patches at least one device reports in this state' }),
});
export const patchOrgQuery = z.object({ orgId: optionalParam(z.uuid()) });
export const idParams = z.object({ id: z.uuid() });
export const ringParams = z.object({ ringId: z.uuid() });
export const jobParams = z.object({ jobId: z.uuid() });

const scope = {
  orgId: z.uuid().optional().meta({ description: 'One organization; left out, the partner (partner users)' }),
  ringId: z.uuid().optional().meta({ description: 'One ring; left out, every ring' }),
};
export const decideBody = z.object(scope).strict();
export const deferBody = z
  .object({ ...scope, until: z.iso.datetime({ offset: true }).meta({ description: 'Not installed before this' }) })
  .strict();
/** 1 to 500 catalogue ids, each kept once. */
const patchIdList = z
  .array(z.uuid())
  .min(1)
  .max(500)
  .transform((list) => [...new Set(list)]);
export const bulkApproveBody = z.object({ patchIds: patchIdList, orgId: scope.orgId }).strict();
export const bulkApproveReply = z
  .object({ approved: z.number().int(), decisions: z.array(decision) })
  .strict()
  .meta({ id: 'PatchBulkApproval' });

export const promoteBody = z.object({ patchIds: patchIdList }).strict();

export const ringState = z
  .object({
    ringId: z.uuid(),
    policyId: z.uuid(),
    key: z.string(),
    order: z.number().int(),
    paused: z.boolean(),
  })
  .strict()
  .meta({ id: 'PatchRingState' });
export const promoteReply = z
  .object({ ringId: z.uuid(), promoted: z.array(z.uuid()) })
  .strict()
  .meta({ id: 'PatchRingPromotion' });

const gate = z
  .object({
    patchId: z.uuid(),
    title: z.string(),
    installed: z.number().int(),
    failed: z.number().int(),
    successPercent: z.number().nullable(),
    healthy: z.number().int(),
    unhealthy: z.number().int(),
    soakedUntil: timestampReply.nullable(),
    promotedByHand: z.boolean(),
    passed: z.boolean(),
  })
  .strict();
export const ringStatus = ringState
  .extend({
    nextRingId: z.uuid().nullable(),
    devices: z.number().int().meta({ description: 'Devices that follow this ring now' }),
    promotion: z.object({ minDevices: z.number(), minSuccessPercent: z.number(), soakHours: z.number() }).strict(),
    nextOccurrence: z.object({ key: z.string(), utc: z.string() }).strict().nullable(),
    patches: z.array(gate).meta({ description: "Per patch this ring installed or holds: the gate's numbers" }),
  })
  .strict()
  .meta({ id: 'PatchRingStatus' });

export const jobAccepted = z
  .object({ jobId: z.uuid(), ringId: z.uuid(), occurrenceKey: z.string(), devices: z.number().int() })
  .strict()
  .meta({ id: 'PatchJobAccepted' });

const jobFields = {
  id: z.uuid(),
  ringId: z.uuid(),
  policyId: z.uuid(),
  occurrenceKey: z.string(),
  manual: z.boolean(),
  startsAt: timestampReply,
  windowUntil: timestampReply,
  rebootPolicy: z.enum(rebootPolicies),
  createdAt: timestampReply,
  devices: z
    .object({
      total: z.number().int(),
      pending: z.number().int(),
      sent: z.number().int(),
      finished: z.number().int(),
      suppressed: z.number().int(),
    })
    .strict(),
};
export const job = z.object(jobFields).strict().meta({ id: 'PatchJob' });
export const jobPage = pageOf(job).meta({ id: 'PatchJobPage' });
export const jobDetail = z
  .object({
    ...jobFields,
    items: z.array(
      z
        .object({
          deviceId: z.uuid(),
          hostname: z.string(),
          status: z.enum(['pending', 'sent', 'finished', 'expired', 'suppressed']),
          /** The maintenance window that held the device back at the occurrence (status suppressed). */
          maintenanceWindowId: z.uuid().nullable(),
          patchIds: z.array(z.uuid()),
          rebootPolicy: z.enum(rebootPolicies),
          sentAt: timestampReply.nullable(),
          finishedAt: timestampReply.nullable(),
          results: z.array(
            z
              .object({
                patchId: z.uuid(),
                outcome: z.enum(installOutcomes),
                exitCode: z.number().int().nullable(),
                message: z.string().nullable(),
                at: timestampReply,
              })
              .strict(),
          ),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'PatchJobDetail' });
export const listJobsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  ringId: optionalParam(z.uuid()),
});

/** The agent's answer to patch.install, one message per patch. */
export const patchResultMessage = z
  .object({
    type: z.literal('patch.result'),
    jobId: z.uuid(),
    patchId: z.uuid(),
    outcome: z.enum(installOutcomes),
    exitCode: z.number().int().nullish(),
    message: z.string().max(2000).nullish(),
  })
  .strip();

export const devicePatches = z
  .object({
    deviceId: z.uuid(),
    scannedAt: timestampReply.nullable(),
    rebootPending: z.boolean().nullable(),
    osUpdaterSuppressed: z.boolean().nullable(),
    policyId: z.uuid().nullable(),
    ringId: z.uuid().nullable(),
    data: z.array(
      z
        .object({
          patchId: z.uuid(),
          externalId: z.string(),
          kb: z.string().nullable(),
          title: z.string(),
          severity: z.enum(patchSeverities),
          category: z.enum(patchCategories),
          source: z.enum(patchSources),
          state: z.enum(patchStates),
          approval: z.enum(['approved', 'declined', 'deferred', 'not-approved']),
          lastError: z.string().nullable(),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'DevicePatches' });

/** An empty parameter reads as absent, then takes the default. */
const defaulted = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);
export const defaultStaleDays = 7;
export const complianceQuery = z
  .object({
    staleDays: defaulted(z.coerce.number().int().min(1).max(365).default(defaultStaleDays)).meta({
      description: `A device not scanned within this many days is stale, counted apart (default ${defaultStaleDays})`,
    }),
    format: defaulted(z.enum(['json', 'csv']).default('json')).meta({ description: 'csv: the devices as text/csv' }),
    trendDays: defaulted(z.coerce.number().int().min(1).max(90).default(90)),
  })
  .strict();
/**
 * The most device rows one reply of an organization's report carries: each row is at most about 2.4 KB (a hostname and
 * a last error at their longest), so a page stays well under the Data API's 1 MiB result.
 */
export const deviceStatesMaxLimit = 200;
/** An organization's report pages its device rows (`deviceStates`); the counts always cover every device. */
export const organizationComplianceQuery = complianceQuery
  .extend(pageQuery({ defaultLimit: 100, maxLimit: deviceStatesMaxLimit }))
  .strict();

export const deviceStates = [
  'failed',
  'missing-approved',
  'pending-reboot',
  'missing-not-approved',
  'installed',
] as const;
const pairCounts = z
  .object(countOf(['failed', 'missingApproved', 'pendingReboot', 'missingNotApproved', 'installed']))
  .strict();
const deviceCounts = pairCounts
  .extend({
    stale: z.number().int().meta({ description: 'Not scanned within staleDays (or never): never compliant' }),
  })
  .strict();
export const compliance = z
  .object({
    orgId: z.uuid(),
    staleDays: z.number().int(),
    devices: deviceCounts.meta({ description: 'Each device in its worst state; stale devices apart' }),
    pairs: pairCounts.meta({ description: 'Device × patch pairs of the devices scanned within staleDays' }),
    osUpdaterNotSuppressed: z.number().int(),
    rings: z.array(
      z
        .object({ ringId: z.uuid().nullable(), key: z.string().nullable(), devices: deviceCounts, pairs: pairCounts })
        .strict(),
    ),
    deviceStates: z.array(
      z
        .object({
          deviceId: z.uuid(),
          hostname: z.string(),
          ringId: z.uuid().nullable(),
          state: z.enum([...deviceStates, 'stale']),
          scannedAt: timestampReply.nullable(),
          osUpdaterSuppressed: z.boolean().nullable(),
          lastError: z.string().nullable(),
        })
        .strict(),
    ),
    pagination: paginationSchema.meta({
      description: 'The page of deviceStates (page, limit); total counts every live device of the organization',
    }),
    trend: z.array(z.object({ day: z.string(), devices: deviceCounts }).strict()),
  })
  .strict()
  .meta({ id: 'PatchCompliance' });

export const partnerParams = z.object({ partnerId: z.uuid() });
export const partnerCompliance = z
  .object({
    partnerId: z.uuid(),
    staleDays: z.number().int(),
    devices: deviceCounts.meta({ description: 'Each device of every organization in its worst state; stale apart' }),
    pairs: pairCounts.meta({ description: 'Device × patch pairs of the devices scanned within staleDays' }),
    osUpdaterNotSuppressed: z.number().int(),
    rings: z.array(
      z
        .object({ ringId: z.uuid().nullable(), key: z.string().nullable(), devices: deviceCounts, pairs: pairCounts })
        .strict(),
    ),
    organizations: z.array(
      z
        .object({
          orgId: z.uuid(),
          name: z.string(),
          devices: deviceCounts,
          pairs: pairCounts,
          osUpdaterNotSuppressed: z.number().int(),
        })
        .strict(),
    ),
    trend: z.array(z.object({ day: z.string(), devices: deviceCounts }).strict()),
  })
  .strict()
  .meta({ id: 'PartnerPatchCompliance' });
