import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { deploymentScript } from '#shared/hierarchy/deployment-script.ts';
import { fileDownload } from '#shared/http/download.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { publicApiUrl } from '#shared/http/public-url.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}/deployment-script'],
  ({ caller, params, query, headers }) =>
    deploymentScript(
      appDb(),
      caller,
      params.id,
      params.keyId,
      query.platform,
      publicApiUrl(headers),
      fileDownload(headers['accept-encoding']),
    ),
);
