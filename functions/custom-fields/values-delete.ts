import { routes } from '#functions/routes.ts';
import { clearDeviceValue } from '#shared/custom-fields/values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/devices/{id}/custom-fields/{key}'],
  ({ caller, params, audit }) => clearDeviceValue(appDb(), caller, params.id, params.key, audit),
);
