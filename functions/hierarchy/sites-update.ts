import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { updateSite } from '#shared/hierarchy/sites.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PATCH /api/v1/orgs/organizations/{id}/sites/{siteId}'],
  ({ caller, params, body }) => updateSite(appDb(), caller, params.id, params.siteId, body),
);
