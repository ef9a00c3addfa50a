import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { startRun } from '#shared/scripts/runs.ts';

export const handler = httpHandler(routes['POST /api/v1/scripts/{scriptId}/runs'], ({ caller, params, body }) =>
  startRun(appDb(), caller, params.scriptId, body),
);
