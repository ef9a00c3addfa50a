import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { listScripts } from '#shared/scripts/library.ts';

export const handler = httpHandler(routes['GET /api/v1/scripts'], ({ caller, query }) =>
  listScripts(appDb(), caller, query),
);
