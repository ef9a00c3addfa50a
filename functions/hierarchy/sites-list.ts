import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listSites } from '#shared/hierarchy/sites.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/orgs/organizations/{id}/sites'], ({ caller, params, query }) =>
  listSites(appDb(), caller, params.id, query),
);
