import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { previewGroupImport } from '#shared/device-groups/import.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/device-groups/import/preview'],
  ({ caller, params, body }) => previewGroupImport(appDb(), caller, params.id, body),
);
