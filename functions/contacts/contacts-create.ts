import { routes } from '#functions/routes.ts';
import { createContact } from '#shared/contacts/contacts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['POST /api/v1/orgs/organizations/{id}/contacts'],
  ({ caller, params, body, audit }) => createContact(appDb(), caller, params.id, body, audit),
);
