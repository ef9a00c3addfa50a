import { z } from 'zod';
import { agentTimestamp, storableText } from '../agents/schemas.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { asUtc } from '../instants.ts';
import { optionalParam } from '../request-values.ts';
import { postureCategories, postureStatuses } from './catalog.ts';

/** Detections per category of one snapshot, and categories per snapshot: far beyond any real device. */
const maxDetectionsPerCategory = 100;

export const detection = z
  .object({
    name: storableText({ min: 1, max: 255 }).meta({ description: 'Product name, as the catalogue names it' }),
    version: storableText({ min: 1, max: 100 }).optional(),
    status: z
      .enum(postureStatuses)
      .meta({ description: 'active: a service or process runs; installed: present, not running' }),
  })
  .strict();

export const postureSnapshot = z
  .object({
    collectedAt: agentTimestamp().transform(asUtc),
    categories: z.partialRecord(
      z.enum(postureCategories),
      z
        .array(detection)
        .max(maxDetectionsPerCategory)
        .refine(
          (list) => new Set(list.map((d) => d.name.toLowerCase())).size === list.length,
          'A product appears at most once per category',
        ),
    ),
  })
  .strict()
  .meta({ id: 'ManagementPostureSnapshot' });

export const postureReceipt = z
  .object({
    deviceId: z.uuid(),
    collectedAt: timestampReply,
    detections: z.number().int(),
    applied: z
      .boolean()
      .meta({ description: 'false when a newer snapshot was already stored: the latest one is kept' }),
  })
  .strict();

const signature = z
  .object({ services: z.array(z.string()).readonly(), processes: z.array(z.string()).readonly() })
  .strict();
export const postureCatalogReply = z
  .object({
    version: z.string(),
    categories: z.array(z.enum(postureCategories)),
    products: z.array(
      z
        .object({
          name: z.string(),
          vendor: z.string(),
          category: z.enum(postureCategories),
          windows: signature,
          macos: signature,
          linux: signature,
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'PostureCatalog' });

/** An empty parameter reads as absent, then takes the default. */
const defaulted = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);
const format = defaulted(z.enum(['json', 'csv']).default('json')).meta({
  description: 'csv: the same rows as a text/csv attachment',
});
const orgId = optionalParam(z.uuid()).meta({ description: 'One organization (default: every one the caller reaches)' });

export const defaultStaleDays = 7;
export const postureReportQuery = z
  .object({
    orgId,
    category: optionalParam(z.enum(postureCategories)).meta({ description: 'Only detections of this category' }),
    staleDays: defaulted(z.coerce.number().int().min(1).max(365).default(defaultStaleDays)).meta({
      description: `A snapshot older than this many days is stale, counted apart (default ${defaultStaleDays})`,
    }),
    format,
  })
  .strict();

export const postureDevicesQuery = z
  .object({
    product: z.string().min(1).max(255),
    status: z.enum(postureStatuses),
    orgId,
    staleDays: postureReportQuery.shape.staleDays,
    format,
    ...pageQuery({ defaultLimit: 50, maxLimit: 500 }),
  })
  .strict();

const count = z.number().int();
export const postureReport = z
  .object({
    generatedAt: timestampReply,
    staleDays: z.number().int(),
    category: z.enum(postureCategories).nullable(),
    coverage: z
      .object({
        devices: count,
        neverScanned: count.meta({ description: 'No snapshot ever: never counted as clean' }),
        stale: count.meta({ description: 'Last snapshot older than staleDays, whatever it found' }),
        clean: count.meta({ description: 'A current snapshot with no detection (in the category, when given)' }),
        withDetection: count.meta({ description: 'A current snapshot with at least one detection' }),
      })
      .strict(),
    products: z.array(
      z
        .object({
          category: z.enum(postureCategories),
          product: z.string(),
          active: count,
          installed: count,
          stale: count.meta({ description: 'Devices whose stale snapshot detected it' }),
        })
        .strict(),
    ),
  })
  .strict()
  .meta({ id: 'ManagementPostureReport' });

export const postureDevice = z
  .object({
    deviceId: z.uuid(),
    orgId: z.uuid(),
    siteId: z.uuid(),
    hostname: z.string(),
    category: z.enum(postureCategories),
    product: z.string(),
    version: z.string().nullable(),
    status: z.enum(postureStatuses),
    collectedAt: timestampReply,
    stale: z.boolean(),
  })
  .strict()
  .meta({ id: 'ManagementPostureDevice' });
export const postureDevicePage = pageOf(postureDevice);
