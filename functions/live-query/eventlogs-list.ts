import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { listEventLogs } from '#shared/live-query/queries.ts';

export const handler = httpHandler(
  routes['GET /api/v1/system-tools/devices/{deviceId}/eventlogs'],
  ({ caller, params }) => listEventLogs(appDb(), caller, params.deviceId),
);
