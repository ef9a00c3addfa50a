import { routes } from '#functions/routes.ts';
import { listApiKeys } from '#shared/auth/api-keys.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/api-keys'],
  ({ caller, params, query }) => listApiKeys(appDb(), caller, params.id, query),
);
