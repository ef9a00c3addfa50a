import { createContact, deleteContact, getContact, listContacts, updateContact } from '#shared/contacts/contacts.ts';
import { commitContactImport, previewContactImport } from '#shared/contacts/import.ts';
import * as contacts from '#shared/contacts/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';

/** The routes of contacts, each with the one domain call answering it. */
export const routes = {
  // Contacts (docs: README "Contacts"): read with orgs:read, written with orgs:write. Audited as
  // contact.create, .update, .delete and .import.
  'POST /api/v1/orgs/organizations/{id}/contacts': route(
    {
      operationId: 'contactsContactsCreate',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: 'Create a contact of the organization, optionally pinned to one of its sites (orgs:write)',
      params: contacts.orgParams,
      body: contacts.createContact,
      status: 201,
      response: contacts.contact,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => createContact(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/contacts': route(
    {
      operationId: 'contactsContactsList',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: "The organization's contacts by name (orgs:read)",
      params: contacts.orgParams,
      query: contacts.listContactsQuery,
      response: contacts.contactPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listContacts(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/orgs/organizations/{id}/contacts/import/preview': route(
    {
      operationId: 'contactsImportPreview',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: 'Annotate up to 1,000 contacts (JSON rows or CSV) against the organization; stores nothing (orgs:write)',
      params: contacts.orgParams,
      body: contacts.contactImport,
      maxBodyBytes: 4 * 1024 * 1024,
      response: contacts.contactImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body }) => previewContactImport(appDb(), caller, params.id, body),
  ),
  'POST /api/v1/orgs/organizations/{id}/contacts/import': route(
    {
      operationId: 'contactsImportCommit',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary:
        'Import up to 1,000 contacts, idempotent on (sourceSystem, externalId); fuzzy matches only when acknowledged (orgs:write)',
      params: contacts.orgParams,
      body: contacts.contactImport,
      maxBodyBytes: 4 * 1024 * 1024,
      response: contacts.contactImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => commitContactImport(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/contacts/{contactId}': route(
    {
      operationId: 'contactsContactsGet',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: 'Get a contact (orgs:read)',
      params: contacts.contactParams,
      response: contacts.contact,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getContact(appDb(), caller, params.contactId),
  ),
  'PATCH /api/v1/contacts/{contactId}': route(
    {
      operationId: 'contactsContactsUpdate',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: 'Change a contact (orgs:write); a key another contact holds is 409 CONFLICT',
      params: contacts.contactParams,
      body: contacts.updateContact,
      response: contacts.contact,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => updateContact(appDb(), caller, params.contactId, body, audit),
  ),
  'DELETE /api/v1/contacts/{contactId}': route(
    {
      operationId: 'contactsContactsDelete',
      auth: 'userOrApiKey',
      tag: 'contacts',
      summary: 'Delete a contact for good; the audit trail keeps it (orgs:write)',
      params: contacts.contactParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteContact(appDb(), caller, params.contactId, audit),
  ),
} as const;
