import { z } from 'zod';
import { createSite } from '../hierarchy/schemas.ts';
import { annotations, importReply, rowNumber } from '../imports/schemas.ts';
import { nameText } from '../request-values.ts';

const maxRows = 1000;
const text = (max: number) => z.string().trim().min(1).max(max);

export const treeAcknowledgement = z
  .object({
    annotation: z.enum(annotations),
    targetId: z
      .uuid()
      .optional()
      .meta({ description: 'name-match: the organization to link to; without it a new organization is created' }),
  })
  .strict();

/** One row: an organization and, optionally, one of its sites. Several rows name several sites of one organization. */
export const treeRow = z
  .object({
    name: nameText(255).meta({ description: "The organization's name" }),
    sourceSystem: text(100)
      .optional()
      .meta({ description: "The import's sourceSystem, repeated (an export may carry it on every row)" }),
    externalId: text(255).optional().meta({ description: "The other RMM's id of the organization" }),
    siteName: createSite.shape.name.optional(),
    timezone: createSite.shape.timezone,
    acknowledge: treeAcknowledgement.optional(),
  })
  .strict();
export type TreeRow = z.output<typeof treeRow>;

export const treeImport = z
  .object({
    sourceSystem: text(100).meta({ description: 'The system the externalIds come from, e.g. datto-rmm' }),
    rows: z.array(z.record(z.string(), z.unknown())).min(1).max(maxRows).optional().meta({
      description: 'Up to 1,000 rows: name, sourceSystem, externalId, siteName, timezone, acknowledge',
    }),
    csv: z.string().min(1).optional().meta({
      description:
        'RFC 4180 CSV with a header row (name, sourceSystem, externalId, siteName, timezone); up to 1,000 data rows, blank cells absent',
    }),
    acknowledgements: z
      .array(treeAcknowledgement.extend({ row: rowNumber }))
      .max(maxRows)
      .optional()
      .meta({ description: 'Acknowledgements by row number, from 1 (JSON rows may also carry their own acknowledge)' }),
  })
  .strict()
  .refine((v) => (v.rows === undefined) !== (v.csv === undefined), {
    message: 'Give rows or csv, not both',
    path: ['rows'],
  });

export const treeImportReply = importReply(
  z.object({
    name: z.string().optional(),
    siteName: z.string().optional(),
    organizationId: z.uuid().optional().meta({ description: 'The organization matched, created or linked' }),
    siteId: z.uuid().optional().meta({ description: 'The site matched or created' }),
  }),
).meta({ id: 'TenancyTreeImportReply' });
