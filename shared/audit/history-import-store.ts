import { type Db, prepared, type Tx } from '../db/db.ts';
import type { AuditRowInput } from './store.ts';

/** Holds the organization's history import until commit: one import of an organization at a time. */
export async function lockHistoryImportOf(tx: Tx, orgId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('audit_history_import:' || :orgId::text, 0))`, {
    orgId,
  });
}

/**
 * A join on the whole key: each externalId probed in the key's index, or, where the planner prefers, one hash of the
 * organization's keys. Never `external_id = ANY (…)`: planned while the keys looked few, that array was a filter
 * compared with every key of the organization, 5,000 comparisons a key (8-10 s a request at 100,000 keys).
 */
const selectKeysSql = prepared(
  'logbook_audit_import_keys',
  `SELECT k.external_id AS "externalId", k.digest
     FROM jsonb_array_elements_text(:externalIds::jsonb) AS x(external_id)
     JOIN audit_import_keys k
       ON k.org_id = :orgId::uuid AND k.source_system = :sourceSystem::text AND k.external_id = x.external_id`,
);

/** The digests of the rows imported before from `sourceSystem` under these externalIds, by externalId. */
export async function selectImportKeys(
  db: Db,
  orgId: string,
  sourceSystem: string,
  externalIds: readonly string[],
): Promise<Map<string, string>> {
  if (externalIds.length === 0) return new Map();
  const { rows } = await db.query<{ externalId: string; digest: string }>(selectKeysSql, {
    orgId,
    sourceSystem,
    externalIds: [...externalIds],
  });
  return new Map(rows.map((row) => [row.externalId, row.digest]));
}

/** A row for the history lane, with its id (chosen by the importer, so it is known before the insert). */
export type LaneRowInput = Omit<AuditRowInput, 'orgId' | 'timestamp'> & { id: string; timestamp: string };

/** The key a lane row is imported under: its entry's id, its externalId in the source system and its digest. */
export type ImportKeyInput = { id: string; externalId: string; digest: string };

/**
 * One statement: the rows into the history lane, in the order given (sealed into the organization's chain by the
 * lane's trigger at its end), and each row's key into audit_import_keys with the position its entry took, joined back
 * by the entry's id. The keys travel apart from the rows, so the rows are read once and never held.
 */
const insertLaneSql = prepared(
  'logbook_audit_history_insert',
  `WITH added AS (
     INSERT INTO audit_history_lane (id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                     resource_id, resource_name, details, ip_address, user_agent, result, error_message)
     SELECT r.id, :orgId::uuid, r.timestamp, r."actorType", r."actorId", r."actorEmail", r.action, r."resourceType",
            r."resourceId", r."resourceName", r.details, r."ipAddress", r."userAgent", r.result, r."errorMessage"
       FROM jsonb_to_recordset(:rows::jsonb) AS r(id uuid, timestamp timestamptz, "actorType" audit_actor_type,
            "actorId" uuid, "actorEmail" text, action text, "resourceType" text, "resourceId" uuid, "resourceName" text,
            details jsonb, "ipAddress" text, "userAgent" text, result audit_result, "errorMessage" text)
     RETURNING id, pos
   ),
   keyed AS (
     INSERT INTO audit_import_keys (org_id, source_system, external_id, digest, pos)
     SELECT :orgId::uuid, :sourceSystem::text, k."externalId", k.digest, a.pos
       FROM added a JOIN jsonb_to_recordset(:keys::jsonb) AS k(id uuid, "externalId" text, digest text) ON k.id = a.id
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM added)::int AS added, (SELECT count(*) FROM keyed)::int AS keyed`,
);

/**
 * What one statement of the insert sends at most, counted as the Data API's request carries it: the parameters are
 * JSON texts inside its JSON body, so each quote and backslash takes one byte more. The request takes 4 MiB, the SQL
 * and the headers included.
 */
export const maxInsertBytes = 3 * 1024 * 1024;

/** The bytes a JSON text takes inside another JSON text: its UTF-8 bytes and one escape byte per quote and backslash. */
const escapedBytes = (text: string) => Buffer.byteLength(text) + (text.match(/["\\]/g)?.length ?? 0);

/**
 * Inserts the rows into the history lane with their import keys (insertLaneSql): one statement, or, when the rows'
 * JSON passes maxInsertBytes, one statement per consecutive part that fits (in the caller's transaction, in order).
 * Each row and key is turned into JSON once, here, and sent as the parameter's text.
 */
export async function insertHistoryRows(
  tx: Tx,
  orgId: string,
  sourceSystem: string,
  rows: readonly LaneRowInput[],
  keys: readonly ImportKeyInput[],
): Promise<void> {
  let from = 0;
  while (from < rows.length) {
    const rowTexts: string[] = [];
    const keyTexts: string[] = [];
    let bytes = 0;
    for (let i = from; i < rows.length; i++) {
      const row = JSON.stringify(rows[i]);
      const key = JSON.stringify(keys[i]);
      const size = escapedBytes(row) + escapedBytes(key) + 2;
      if (rowTexts.length > 0 && bytes + size > maxInsertBytes) break;
      rowTexts.push(row);
      keyTexts.push(key);
      bytes += size;
    }
    const { rows: counted } = await tx.query<{ added: number; keyed: number }>(insertLaneSql, {
      orgId,
      sourceSystem,
      rows: `[${rowTexts.join(',')}]`,
      keys: `[${keyTexts.join(',')}]`,
    });
    // Every entry has its key, or the statement is rolled back with the transaction.
    if (counted[0]?.added !== rowTexts.length || counted[0]?.keyed !== rowTexts.length)
      throw new Error(
        `the history import stored ${counted[0]?.added} entries and ${counted[0]?.keyed} keys of ${rowTexts.length}`,
      );
    from += rowTexts.length;
  }
}
