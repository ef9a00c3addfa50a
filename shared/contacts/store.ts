import { type Db, one, type Params } from '../db/db.ts';
import { likePattern } from '../db/like-pattern.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { ContactRole } from './schemas.ts';

const contactColumns = `c.id, c.org_id AS "orgId", c.site_id AS "siteId", c.name, c.email, c.phone, c.title, c.roles,
  c.notes, c.source_system AS "sourceSystem", c.external_id AS "externalId", c.created_at AS "createdAt",
  c.updated_at AS "updatedAt"`;

export type ContactRecord = {
  id: string;
  orgId: string;
  siteId: string | null;
  name: string;
  email: string | null;
  phone: string | null;
  title: string | null;
  roles: ContactRole[];
  notes: string | null;
  sourceSystem: string | null;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
};

/** What a write stores: every column a caller sets (a change names only the fields it sets). */
export type ContactValues = Partial<
  Pick<
    ContactRecord,
    'siteId' | 'name' | 'email' | 'phone' | 'title' | 'roles' | 'notes' | 'sourceSystem' | 'externalId'
  >
>;

/** Contact writes of one organization take turns on this transaction lock: an import re-derives its rows under it. */
export async function lockContactsOf(tx: Db, orgId: string) {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('contacts:' || :orgId::text, 0))`, { orgId });
}

export function selectContact(db: Db, contactId: string) {
  return one<ContactRecord>(db, `SELECT ${contactColumns} FROM contacts c WHERE c.id = :contactId::uuid`, {
    contactId,
  });
}

export function selectContacts(db: Db, orgId: string, filter: { search?: string; siteId?: string }, page: Page) {
  return selectPage<ContactRecord>(
    db,
    contactColumns,
    `contacts c WHERE c.org_id = :orgId::uuid
       AND (:siteId::uuid IS NULL OR c.site_id = :siteId::uuid)
       AND (:search::text IS NULL OR c.name ILIKE :search::text OR c.email ILIKE :search::text)`,
    'c.name, c.id',
    { orgId, siteId: filter.siteId ?? null, search: filter.search ? likePattern(filter.search) : null },
    page,
  );
}

/** The contact holding this key in the organization, other than `exceptId`. */
export function selectContactByKey(
  db: Db,
  orgId: string,
  key: { sourceSystem: string; externalId: string },
  exceptId: string | null,
) {
  return one<{ id: string }>(
    db,
    `SELECT id FROM contacts WHERE org_id = :orgId::uuid AND source_system = :sourceSystem::text
        AND external_id = :externalId::text AND id IS DISTINCT FROM :exceptId::uuid`,
    { orgId, ...key, exceptId },
  );
}

/** Inserts contacts (their ids chosen by the caller) in one statement. */
export async function insertContactRows(tx: Db, orgId: string, contacts: (ContactValues & { id: string })[]) {
  const { rows } = await tx.query<ContactRecord>(
    `WITH c AS (
       INSERT INTO contacts (id, org_id, site_id, name, email, phone, title, roles, notes, source_system, external_id)
       SELECT r.id, :orgId::uuid, r."siteId", r.name, r.email, r.phone, r.title, coalesce(r.roles, '[]'), r.notes,
              r."sourceSystem", r."externalId"
         FROM jsonb_to_recordset(:contacts::jsonb) AS r(id uuid, "siteId" uuid, name text, email text, phone text,
              title text, roles jsonb, notes text, "sourceSystem" text, "externalId" text)
       RETURNING *
     )
     SELECT ${contactColumns} FROM c`,
    { orgId, contacts: contacts as unknown as Params[string] },
  );
  return rows;
}

/**
 * Changes contacts of one organization in one statement: each change sets only the fields it names (a field
 * named with null clears it).
 */
export async function updateContactRows(tx: Db, orgId: string, changes: { id: string; change: ContactValues }[]) {
  const { rows } = await tx.query<ContactRecord>(
    `WITH c AS (
       UPDATE contacts c SET
          site_id = CASE WHEN r.change ? 'siteId' THEN (r.change ->> 'siteId')::uuid ELSE c.site_id END,
          name = CASE WHEN r.change ? 'name' THEN r.change ->> 'name' ELSE c.name END,
          email = CASE WHEN r.change ? 'email' THEN r.change ->> 'email' ELSE c.email END,
          phone = CASE WHEN r.change ? 'phone' THEN r.change ->> 'phone' ELSE c.phone END,
          title = CASE WHEN r.change ? 'title' THEN r.change ->> 'title' ELSE c.title END,
          roles = CASE WHEN r.change ? 'roles' THEN r.change -> 'roles' ELSE c.roles END,
          notes = CASE WHEN r.change ? 'notes' THEN r.change ->> 'notes' ELSE c.notes END,
          source_system = CASE WHEN r.change ? 'sourceSystem' THEN r.change ->> 'sourceSystem' ELSE c.source_system END,
          external_id = CASE WHEN r.change ? 'externalId' THEN r.change ->> 'externalId' ELSE c.external_id END,
          updated_at = now()
         FROM jsonb_to_recordset(:changes::jsonb) AS r(id uuid, change jsonb)
        WHERE c.id = r.id AND c.org_id = :orgId::uuid
       RETURNING c.*
     )
     SELECT ${contactColumns} FROM c`,
    { orgId, changes: changes as unknown as Params[string] },
  );
  return rows;
}

export async function deleteContactRow(tx: Db, contactId: string) {
  const { rowCount } = await tx.query('DELETE FROM contacts WHERE id = :contactId::uuid', { contactId });
  return rowCount > 0;
}

// Import matching

/** The organization's contacts holding these (sourceSystem, externalId) keys. */
export async function selectContactsByKeys(
  db: Db,
  orgId: string,
  keys: { sourceSystem: string; externalId: string }[],
) {
  const { rows } = await db.query<ContactRecord>(
    `SELECT ${contactColumns} FROM contacts c
       JOIN jsonb_to_recordset(:keys::jsonb) AS k("sourceSystem" text, "externalId" text)
         ON c.source_system = k."sourceSystem" AND c.external_id = k."externalId"
      WHERE c.org_id = :orgId::uuid`,
    { orgId, keys: keys as unknown as Params[string] },
  );
  return rows;
}

/** The organization's contacts whose e-mail equals one of these, ignoring case and surrounding whitespace. */
export async function selectContactsByEmails(db: Db, orgId: string, emails: string[]) {
  const { rows } = await db.query<ContactRecord & { emailKey: string }>(
    `SELECT ${contactColumns}, lower(btrim(c.email)) AS "emailKey" FROM contacts c
      WHERE c.org_id = :orgId::uuid AND c.email IS NOT NULL
        AND lower(btrim(c.email)) IN (SELECT lower(btrim(e)) FROM jsonb_array_elements_text(:emails::jsonb) e)
      ORDER BY c.created_at, c.id`,
    { orgId, emails },
  );
  return rows;
}

/** A name's words as the name index of 0026 holds them: this text must stay the index's expression. */
const nameWords = (column: string) => `tsvector_to_array(to_tsvector('simple'::regconfig, ${column}))`;

/**
 * For each name, the organization's most similar contact (pg_trgm similarity at least `threshold`) among contacts
 * that share a word of the name and are not linked to `sourceSystem` (another record of that system is another
 * person, whatever its name). The word index of 0026 finds the candidates; similarity ranks them.
 */
export async function selectNearestNames(
  db: Db,
  orgId: string,
  names: { row: number; name: string; sourceSystem: string | null }[],
  threshold: number,
) {
  const { rows } = await db.query<{ row: number; contact: ContactRecord; similarity: number }>(
    `SELECT DISTINCT ON (r.row) r.row, to_jsonb(near) - 'similarity' AS contact, near.similarity
       FROM jsonb_to_recordset(:names::jsonb) AS r("row" int, name text, "sourceSystem" text)
       CROSS JOIN LATERAL (
         SELECT ${contactColumns}, similarity(c.name, r.name) AS similarity FROM contacts c
          WHERE ${nameWords('c.name')} && ${nameWords('r.name')} AND c.org_id = :orgId::uuid
            AND (r."sourceSystem" IS NULL OR c.source_system IS DISTINCT FROM r."sourceSystem")
       ) near
      WHERE near.similarity >= :threshold::float8
      ORDER BY r.row, near.similarity DESC, near."createdAt", near.id`,
    { orgId, names: names as unknown as Params[string], threshold },
  );
  return rows;
}
