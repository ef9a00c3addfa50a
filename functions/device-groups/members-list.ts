import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listMembers } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/device-groups/{groupId}/members'], ({ caller, params, query }) =>
  listMembers(appDb(), caller, params.groupId, query),
);
