import { routes } from '#functions/routes.ts';
import { revokeApiKey } from '#shared/auth/api-keys.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/orgs/organizations/{id}/api-keys/{keyId}'],
  ({ caller, params }) => revokeApiKey(appDb(), caller, params.id, params.keyId),
);
