import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { createGroup } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/device-groups'],
  ({ caller, params, body, audit }) => createGroup(appDb(), caller, params.id, body, audit),
);
