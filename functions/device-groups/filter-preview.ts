import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { previewFilter } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/device-groups/preview'],
  ({ caller, params, body, query }) => previewFilter(appDb(), caller, params.id, body, query),
);
