import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { submitEvents } from '#shared/event-logs/ingest.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PUT /api/v1/agents/{id}/eventlogs'], ({ caller, params, body, audit }) =>
  submitEvents(appDb(), caller, params.id, body.events, audit),
);
