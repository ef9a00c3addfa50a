import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { updateDevice } from '#shared/hierarchy/devices.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PATCH /api/v1/devices/{id}'], ({ caller, params, body, audit }) =>
  updateDevice(appDb(), caller, params.id, body, audit),
);
