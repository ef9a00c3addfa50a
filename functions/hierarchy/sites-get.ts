import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { getSite } from '#shared/hierarchy/sites.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations/{id}/sites/{siteId}'], ({ caller, params }) =>
  getSite(appDb(), caller, params.id, params.siteId),
);
