import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listGroups } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/device-groups'],
  ({ caller, params, query }) => listGroups(appDb(), caller, params.id, query),
);
