import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { getScript } from '#shared/scripts/library.ts';

export const handler = httpHandler(routes['GET /api/v1/scripts/{scriptId}'], ({ caller, params }) =>
  getScript(appDb(), caller, params.scriptId),
);
