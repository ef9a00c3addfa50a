import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { listRunItems } from '#shared/scripts/runs.ts';

export const handler = httpHandler(routes['GET /api/v1/script-runs/{runId}/items'], ({ caller, params, query }) =>
  listRunItems(appDb(), caller, params.runId, query),
);
