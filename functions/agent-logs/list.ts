import { routes } from '#functions/routes.ts';
import { listDiagnosticLogs } from '#shared/agent-logs/query.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/devices/{id}/diagnostic-logs'], ({ caller, params, query }) =>
  listDiagnosticLogs(appDb(), caller, params.id, query),
);
