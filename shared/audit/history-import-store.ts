import { type Db, prepared, type Tx } from '../db/db.ts';
import type { AuditRowInput } from './store.ts';

/** Holds the organization's history import until commit: one import of an organization at a time. */
export async function lockHistoryImportOf(tx: Tx, orgId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('audit_history_import:' || :orgId::text, 0))`, {
    orgId,
  });
}

const selectKeysSql = prepared(
  'logbook_audit_import_keys',
  `SELECT external_id AS "externalId", digest FROM audit_import_keys
    WHERE org_id = :orgId::uuid AND source_system = :sourceSystem::text
      AND external_id = ANY (ARRAY(SELECT jsonb_array_elements_text(:externalIds::jsonb)))`,
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

/** A row for the history lane, with the key it is imported under. */
export type LaneRowInput = Omit<AuditRowInput, 'orgId' | 'timestamp'> & {
  /** The row number of the request, which the statement answers each entry by. */
  row: number;
  timestamp: string;
  externalId: string;
  digest: string;
};

/**
 * One statement: the rows into the history lane (sealed into the organization's chain by the lane's trigger at its
 * end, in the order given) and each row's key into audit_import_keys with the position it took. Answers each row's
 * entry by its row number.
 */
const insertLaneSql = prepared(
  'logbook_audit_history_insert',
  `WITH given AS MATERIALIZED (
     SELECT gen_random_uuid() AS id, r.*
       FROM jsonb_to_recordset(:rows::jsonb) AS r("row" int, "externalId" text, digest text, timestamp timestamptz,
            "actorType" audit_actor_type, "actorId" uuid, "actorEmail" text, action text, "resourceType" text,
            "resourceName" text, details jsonb, "ipAddress" text, "userAgent" text, result audit_result,
            "errorMessage" text)
   ),
   added AS (
     INSERT INTO audit_history_lane (id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                     resource_id, resource_name, details, ip_address, user_agent, result, error_message)
     SELECT g.id, :orgId::uuid, g.timestamp, g."actorType", g."actorId", g."actorEmail", g.action, g."resourceType",
            NULL, g."resourceName", g.details, g."ipAddress", g."userAgent", g.result, g."errorMessage"
       FROM given g ORDER BY g."row"
     RETURNING id, pos
   ),
   keyed AS (
     INSERT INTO audit_import_keys (org_id, source_system, external_id, digest, pos)
     SELECT :orgId::uuid, :sourceSystem::text, g."externalId", g.digest, a.pos FROM added a JOIN given g ON g.id = a.id
   )
   SELECT g."row", a.id::text AS id FROM added a JOIN given g ON g.id = a.id ORDER BY g."row"`,
);

/** Inserts the rows into the history lane with their import keys (insertLaneSql); answers entry ids by row number. */
export async function insertHistoryRows(
  tx: Tx,
  orgId: string,
  sourceSystem: string,
  rows: readonly LaneRowInput[],
): Promise<Map<number, string>> {
  if (rows.length === 0) return new Map();
  const { rows: added } = await tx.query<{ row: number; id: string }>(insertLaneSql, {
    orgId,
    sourceSystem,
    rows: [...rows],
  });
  return new Map(added.map((entry) => [entry.row, entry.id]));
}
