import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { byRouteKey } from '#shared/http/by-route-key.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { getEvent } from '#shared/live-query/queries.ts';

export const handler = byRouteKey({
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}': httpHandler(
    routes['GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}'],
    ({ caller, params }) => getEvent(appDb(), caller, params.deviceId, params.name, params.recordId),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events/{recordId}': httpHandler(
    routes['GET /api/v1/devices/{id}/eventlogs/{name}/events/{recordId}'],
    ({ caller, params }) => getEvent(appDb(), caller, params.id, params.name, params.recordId),
  ),
});
