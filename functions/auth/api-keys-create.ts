import { routes } from '#functions/routes.ts';
import { createApiKey } from '#shared/auth/api-keys.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/api-keys'],
  ({ caller, params, body }) => createApiKey(appDb(), caller, params.id, body),
);
