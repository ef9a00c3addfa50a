import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Permission } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Conflict, NotFound, ValidationFailed } from '../errors.ts';
import { selectSite } from '../hierarchy/store.ts';
import type { createContact as createSchema, updateContact as updateSchema } from './schemas.ts';
import type { ContactRecord, ContactValues } from './store.ts';
import * as store from './store.ts';

/** Contacts are read with orgs:read and written with orgs:write, as their organization is (docs/contacts.md). */
export const contactsRead: Permission = 'orgs:read';
export const contactsWrite: Permission = 'orgs:write';

/** The fields a contact's audit rows show before and after. */
export const auditedFields = [
  'name',
  'email',
  'phone',
  'title',
  'roles',
  'notes',
  'siteId',
  'sourceSystem',
  'externalId',
] as const;

export const contactResource = (contact: { id: string; name: string }) => ({
  resourceType: 'contact',
  resourceId: contact.id,
  resourceName: contact.name,
});
export const contactSnapshot = (contact: ContactRecord) =>
  Object.fromEntries(auditedFields.map((field) => [field, contact[field]]));

/** The contact if the principal may reach its organization (404 otherwise, never saying whether it exists). */
async function reachableContact(db: Db, principal: Principal, contactId: string, permission: Permission) {
  const contact = await store.selectContact(db, contactId);
  if (!contact || !(await selectOrganization(db, principal, contact.orgId))) throw NotFound('Contact');
  requirePermission(principal, permission);
  return contact;
}

/** Inside the organization's contact lock: the site is the organization's, the key free (409 CONFLICT). */
async function checkContact(tx: Db, orgId: string, contactId: string | null, values: ContactValues) {
  if (values.siteId && !(await selectSite(tx, orgId, values.siteId)))
    throw ValidationFailed('siteId is not a site of this organization', [
      { path: 'body.siteId', message: 'Unknown site', code: 'custom' },
    ]);
  if (values.sourceSystem && values.externalId) {
    const key = { sourceSystem: values.sourceSystem, externalId: values.externalId };
    if (await store.selectContactByKey(tx, orgId, key, contactId))
      throw Conflict('Another contact of this organization has this sourceSystem and externalId');
  }
}

export async function listContacts(
  db: Db,
  principal: Principal,
  orgId: string,
  query: Page & { search?: string; siteId?: string },
) {
  await reachableOrganization(db, principal, orgId, contactsRead);
  return store.selectContacts(db, orgId, query, query);
}

export const getContact = (db: Db, principal: Principal, contactId: string) =>
  reachableContact(db, principal, contactId, contactsRead);

/** Audited as contact.create with the contact's fields. */
export async function createContact(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof createSchema>,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, contactsWrite);
  const [created] = await db.transaction(async (tx) => {
    await store.lockContactsOf(tx, orgId);
    await checkContact(tx, orgId, null, input);
    const rows = await store.insertContactRows(tx, orgId, [{ ...input, id: randomUUID() }]);
    await auditChange(tx, audit, {
      orgId,
      action: 'contact.create',
      ...contactResource(rows[0]!),
      details: { after: contactSnapshot(rows[0]!) },
    });
    return rows;
  });
  return created!;
}

/** Audited as contact.update with the changed fields before and after. */
export async function updateContact(
  db: Db,
  principal: Principal,
  contactId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const before = await reachableContact(db, principal, contactId, contactsWrite);
  const after = await db.transaction(async (tx) => {
    await store.lockContactsOf(tx, before.orgId);
    const key = 'externalId' in change ? change : before;
    // The rule of the table (0026_contacts.sql): sourceSystem and externalId are set together or cleared together.
    const sourceSystem = change.sourceSystem !== undefined ? change.sourceSystem : before.sourceSystem;
    const externalId = change.externalId !== undefined ? change.externalId : before.externalId;
    if ((sourceSystem == null) !== (externalId == null))
      throw ValidationFailed('sourceSystem and externalId are set or cleared together', [
        {
          path: change.externalId !== undefined ? 'body.externalId' : 'body.sourceSystem',
          message: 'sourceSystem and externalId are set or cleared together',
          code: 'custom',
        },
      ]);
    await checkContact(tx, before.orgId, contactId, {
      siteId: change.siteId,
      sourceSystem: key.sourceSystem,
      externalId: key.externalId,
    });
    const [updated] = await store.updateContactRows(tx, before.orgId, [{ id: contactId, change }]);
    if (!updated) throw NotFound('Contact');
    await auditChange(tx, audit, {
      orgId: updated.orgId,
      action: 'contact.update',
      ...contactResource(updated),
      details: changedFields(before, updated, auditedFields),
    });
    return updated;
  });
  return after;
}

/** Deleted for good; the audit trail keeps it as contact.delete with the contact's fields. */
export async function deleteContact(db: Db, principal: Principal, contactId: string, audit: AuditContext) {
  const contact = await reachableContact(db, principal, contactId, contactsWrite);
  await db.transaction(async (tx) => {
    await store.lockContactsOf(tx, contact.orgId);
    if (!(await store.deleteContactRow(tx, contactId))) throw NotFound('Contact');
    await auditChange(tx, audit, {
      orgId: contact.orgId,
      action: 'contact.delete',
      ...contactResource(contact),
      details: { before: contactSnapshot(contact) },
    });
  });
}
