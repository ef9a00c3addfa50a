import { routes } from '#functions/routes.ts';
import { commitValuesImport } from '#shared/custom-fields/import-values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/custom-fields/import/values'], ({ caller, body, audit }) =>
  commitValuesImport(appDb(), caller, body, audit),
);
