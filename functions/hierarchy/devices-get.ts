import { routes } from '#functions/routes.ts';
import { getDeviceWithFields } from '#shared/custom-fields/values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices/{id}'], ({ caller, params }) =>
  getDeviceWithFields(appDb(), caller, params.id),
);
