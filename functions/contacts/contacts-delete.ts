import { routes } from '#functions/routes.ts';
import { deleteContact } from '#shared/contacts/contacts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['DELETE /api/v1/contacts/{contactId}'], ({ caller, params, audit }) =>
  deleteContact(appDb(), caller, params.contactId, audit),
);
