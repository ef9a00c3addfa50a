import { routes } from '#functions/routes.ts';
import { previewDefinitionsImport } from '#shared/custom-fields/import-definitions.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/custom-fields/import/definitions/preview'],
  ({ caller, body }) => previewDefinitionsImport(appDb(), caller, body),
);
