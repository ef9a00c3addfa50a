import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { byRouteKey } from '#shared/http/by-route-key.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { getEventLog } from '#shared/live-query/queries.ts';

export const handler = byRouteKey({
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}': httpHandler(
    routes['GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}'],
    ({ caller, params }) => getEventLog(appDb(), caller, params.deviceId, params.name),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}': httpHandler(
    routes['GET /api/v1/devices/{id}/eventlogs/{name}'],
    ({ caller, params }) => getEventLog(appDb(), caller, params.id, params.name),
  ),
});
