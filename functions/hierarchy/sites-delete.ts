import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { deleteSite } from '#shared/hierarchy/sites.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/orgs/organizations/{id}/sites/{siteId}'],
  ({ caller, params }) => deleteSite(appDb(), caller, params.id, params.siteId),
);
