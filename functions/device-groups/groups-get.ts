import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { getGroup } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/device-groups/{groupId}'], ({ caller, params }) =>
  getGroup(appDb(), caller, params.groupId),
);
