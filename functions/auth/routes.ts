import { auditChange } from '#shared/audit/writer.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '#shared/auth/api-keys.ts';
import * as keys from '#shared/auth/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';

/** The routes of auth, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/orgs/organizations/{id}/api-keys': route(
    {
      operationId: 'authApiKeysCreate',
      auth: 'user',
      tag: 'api-keys',
      summary: 'Create an organization API key (lbk_…)',
      params: h.idParams,
      body: keys.createApiKey,
      status: 201,
      response: keys.createdApiKey,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) =>
      createApiKey(appDb(), caller, params.id, body, (tx, event) => auditChange(tx, audit, event)),
  ),
  'GET /api/v1/orgs/organizations/{id}/api-keys': route(
    {
      operationId: 'authApiKeysList',
      auth: 'user',
      tag: 'api-keys',
      summary: 'List API keys (without the keys themselves)',
      params: h.idParams,
      query: h.pageOnlyQuery,
      response: keys.apiKeyPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listApiKeys(appDb(), caller, params.id, query),
  ),
  'DELETE /api/v1/orgs/organizations/{id}/api-keys/{keyId}': route(
    {
      operationId: 'authApiKeysRevoke',
      auth: 'user',
      tag: 'api-keys',
      summary: 'Revoke an API key',
      params: h.keyParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) =>
      revokeApiKey(appDb(), caller, params.id, params.keyId, (tx, event) => auditChange(tx, audit, event)),
  ),
} as const;
