import { routes } from '#functions/routes.ts';
import { setDeviceValue } from '#shared/custom-fields/values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PUT /api/v1/devices/{id}/custom-fields/{key}'],
  ({ caller, params, body, audit }) => setDeviceValue(appDb(), caller, params.id, params.key, body.value, audit),
);
