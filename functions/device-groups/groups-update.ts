import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { updateGroup } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PATCH /api/v1/device-groups/{groupId}'], ({ caller, params, body, audit }) =>
  updateGroup(appDb(), caller, params.groupId, body, audit),
);
