import { routes } from '#functions/routes.ts';
import { updateRetentionPolicy } from '#shared/audit/retention-policy.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/orgs/organizations/{id}/audit-retention'],
  ({ caller, params, body, audit }) => updateRetentionPolicy(appDb(), caller, params.id, body, audit),
);
