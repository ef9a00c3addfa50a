import { routes } from '#functions/routes.ts';
import { commitContactImport } from '#shared/contacts/import.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/contacts/import'],
  ({ caller, params, body, audit }) => commitContactImport(appDb(), caller, params.id, body, audit),
);
