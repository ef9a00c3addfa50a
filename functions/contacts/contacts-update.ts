import { routes } from '#functions/routes.ts';
import { updateContact } from '#shared/contacts/contacts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['PATCH /api/v1/contacts/{contactId}'], ({ caller, params, body, audit }) =>
  updateContact(appDb(), caller, params.contactId, body, audit),
);
