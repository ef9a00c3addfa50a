import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { getDevice } from '#shared/hierarchy/devices.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices/{id}'], ({ caller, params }) =>
  getDevice(appDb(), caller, params.id),
);
