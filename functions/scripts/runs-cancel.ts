import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { cancelRun } from '#shared/scripts/runs.ts';

export const handler = httpHandler(routes['POST /api/v1/script-runs/{runId}/cancel'], ({ caller, params }) =>
  cancelRun(appDb(), caller, params.runId),
);
