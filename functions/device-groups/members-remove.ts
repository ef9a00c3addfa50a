import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { removeMembers } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/device-groups/{groupId}/members/remove'],
  ({ caller, params, body, audit }) => removeMembers(appDb(), caller, params.groupId, body.deviceIds, audit),
);
