import { routes } from '#functions/routes.ts';
import { getRetentionPolicy } from '#shared/audit/retention-policy.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/audit-retention'],
  ({ caller, params }) => getRetentionPolicy(appDb(), caller, params.id),
);
