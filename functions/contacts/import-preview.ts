import { routes } from '#functions/routes.ts';
import { previewContactImport } from '#shared/contacts/import.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/contacts/import/preview'],
  ({ caller, params, body }) => previewContactImport(appDb(), caller, params.id, body),
);
