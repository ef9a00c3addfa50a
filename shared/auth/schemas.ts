import { z } from 'zod';
import { pageOf } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { apiKeyRoles } from './permissions.ts';

/** An organization's API key as listed: never the key itself, only its first characters. */
export const apiKey = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    name: z.string(),
    role: z.enum(apiKeyRoles),
    keyPrefix: z.string(),
    revokedAt: timestampReply.nullable(),
    createdAt: timestampReply,
  })
  .meta({ id: 'ApiKey' });
export const createdApiKey = apiKey
  .extend({ key: z.string().meta({ description: 'The key itself (lbk_…); shown only in this reply' }) })
  .meta({ id: 'CreatedApiKey' });
export const createApiKey = z
  .object({ name: z.string().trim().min(1).max(255), role: z.enum(apiKeyRoles).default('org_viewer') })
  .strict();
export const apiKeyPage = pageOf(apiKey);
