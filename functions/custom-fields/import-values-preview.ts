import { routes } from '#functions/routes.ts';
import { previewValuesImport } from '#shared/custom-fields/import-values.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/custom-fields/import/values/preview'], ({ caller, body }) =>
  previewValuesImport(appDb(), caller, body),
);
