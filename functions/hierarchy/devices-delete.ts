import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { deleteDevice } from '#shared/hierarchy/devices.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['DELETE /api/v1/devices/{id}'], ({ caller, params, audit }) =>
  deleteDevice(appDb(), caller, params.id, audit),
);
