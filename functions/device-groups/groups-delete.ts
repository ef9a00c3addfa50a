import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { deleteGroup } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['DELETE /api/v1/device-groups/{groupId}'], ({ caller, params, audit }) =>
  deleteGroup(appDb(), caller, params.groupId, audit),
);
