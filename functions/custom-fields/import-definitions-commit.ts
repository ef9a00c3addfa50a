import { routes } from '#functions/routes.ts';
import { commitDefinitionsImport } from '#shared/custom-fields/import-definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/custom-fields/import/definitions'], ({ caller, body, audit }) =>
  commitDefinitionsImport(appDb(), caller, body, audit),
);
