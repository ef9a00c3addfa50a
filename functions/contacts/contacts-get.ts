import { routes } from '#functions/routes.ts';
import { getContact } from '#shared/contacts/contacts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/contacts/{contactId}'], ({ caller, params }) =>
  getContact(appDb(), caller, params.contactId),
);
