import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { getRun } from '#shared/scripts/runs.ts';

export const handler = httpHandler(routes['GET /api/v1/script-runs/{runId}'], ({ caller, params }) =>
  getRun(appDb(), caller, params.runId),
);
