import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { byRouteKey } from '#shared/http/by-route-key.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { listEvents } from '#shared/live-query/queries.ts';

export const handler = byRouteKey({
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events': httpHandler(
    routes['GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events'],
    ({ caller, params, query }) => listEvents(appDb(), caller, params.deviceId, params.name, query),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events': httpHandler(
    routes['GET /api/v1/devices/{id}/eventlogs/{name}/events'],
    ({ caller, params, query }) => listEvents(appDb(), caller, params.id, params.name, query),
  ),
});
