import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listGroupsOfDevice } from '#shared/device-groups/groups.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices/{id}/groups'], ({ caller, params, query }) =>
  listGroupsOfDevice(appDb(), caller, params.id, query),
);
