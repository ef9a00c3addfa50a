import { routes } from '#functions/routes.ts';
import { listDefinitions } from '#shared/custom-fields/definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/custom-fields'], ({ caller, query }) =>
  listDefinitions(appDb(), caller, query),
);
