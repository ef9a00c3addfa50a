import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listDevices } from '#shared/hierarchy/devices.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices'], ({ caller, query }) =>
  listDevices(appDb(), caller, query),
);
