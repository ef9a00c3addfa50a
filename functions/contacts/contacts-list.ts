import { routes } from '#functions/routes.ts';
import { listContacts } from '#shared/contacts/contacts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['GET /api/v1/orgs/organizations/{id}/contacts'],
  ({ caller, params, query }) => listContacts(appDb(), caller, params.id, query),
);
