import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { createSite } from '#shared/hierarchy/sites.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/orgs/organizations/{id}/sites'], ({ caller, params, body }) =>
  createSite(appDb(), caller, params.id, body),
);
