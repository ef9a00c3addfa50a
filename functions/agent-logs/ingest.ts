import { routes } from '#functions/routes.ts';
import { submitLogs } from '#shared/agent-logs/ingest.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/agents/{id}/logs'], ({ caller, params, body, headers }) =>
  submitLogs(appDb(), caller, params.id, body.logs, headers['idempotency-key']),
);
