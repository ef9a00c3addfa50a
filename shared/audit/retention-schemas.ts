import { z } from 'zod';
import { timestampReply } from '../db/timestamp.ts';

/** The default retention of a policy, and the bounds a policy may take. */
export const defaultRetentionDays = 365;
export const maxRetentionDays = 3650;

/** PUT /api/v1/orgs/organizations/{id}/audit-retention: archiveToS3 is reserved, so not accepted. */
export const updateRetentionPolicy = z
  .object({
    retentionDays: z
      .number()
      .int()
      .min(1)
      .max(maxRetentionDays)
      .meta({ description: `Days to keep audit rows: an integer from 1 to ${maxRetentionDays}` }),
  })
  .strict();

/** The policy fields and whether a policy row exists. */
export const retentionPolicy = z
  .object({
    orgId: z.uuid(),
    retentionDays: z
      .number()
      .int()
      .meta({ description: `Days audit rows are kept; ${defaultRetentionDays} (the default) when not configured` }),
    archiveToS3: z
      .boolean()
      .meta({ description: 'Reserved: archiving before deletion is not implemented; always false' }),
    lastCleanupAt: timestampReply
      .nullable()
      .meta({ description: 'When the daily retention worker last applied the policy; null before its first run' }),
    configured: z.boolean().meta({
      description:
        'false: the organization has no policy (created before v0.110.0) and its rows are kept without limit until one is saved; the defaults are shown',
    }),
  })
  .meta({ id: 'AuditRetentionPolicy' });
