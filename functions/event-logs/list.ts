import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { listEventLogs } from '#shared/event-logs/query.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices/{id}/eventlogs'], ({ caller, params, query }) =>
  listEventLogs(appDb(), caller, params.id, query),
);
