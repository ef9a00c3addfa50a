import { type Db, prepared, type Tx } from '../db/db.ts';
import type { AuditRowInput } from './store.ts';

/**
 * A join on the whole key: each externalId probed in the key's index, or, where the planner prefers, one hash of the
 * organization's keys. Never `external_id = ANY (…)`: planned while the keys looked few, that array was a filter
 * compared with every key of the organization, 5,000 comparisons a key (8-10 s a request at 100,000 keys). It answers
 * each key's place in the list sent, not its externalId: 5,000 externalIds of 255 characters would pass the Data API's
 * 1 MiB result.
 */
const selectKeysSql = prepared(
  'logbook_audit_import_keys',
  `SELECT x.n::int AS n, k.digest
     FROM jsonb_array_elements_text(:externalIds::jsonb) WITH ORDINALITY AS x(external_id, n)
     JOIN audit_import_keys k
       ON k.org_id = :orgId::uuid AND k.source_system = :sourceSystem::text AND k.external_id = x.external_id`,
);

/**
 * The digests of the rows imported before from `sourceSystem` under these externalIds, by externalId: one query, or
 * one per consecutive part of the list whose JSON passes what a Data API request carries (maxInsertBytes).
 */
export async function selectImportKeys(
  db: Db,
  orgId: string,
  sourceSystem: string,
  externalIds: readonly string[],
): Promise<Map<string, string>> {
  const texts = externalIds.map((externalId) => JSON.stringify(externalId));
  const stored = new Map<string, string>();
  for (const [from, to] of partsOf(texts.map((text) => escapedBytes(text) + 1))) {
    const { rows } = await db.query<{ n: number; digest: string }>(selectKeysSql, {
      orgId,
      sourceSystem,
      externalIds: `[${texts.slice(from, to).join(',')}]`,
    });
    for (const row of rows) stored.set(externalIds[from + row.n - 1]!, row.digest);
  }
  return stored;
}

/**
 * An imported row as the insert takes it: its entry's columns (its id chosen by the importer, so it is known before the
 * insert; the resource id is always null) and its key, the externalId in the source system and the digest.
 */
export type LaneEntry = Omit<AuditRowInput, 'orgId' | 'timestamp' | 'resourceId'> & {
  id: string;
  timestamp: string;
  externalId: string;
  digest: string;
};

/**
 * Where each field of a LaneEntry stands in its JSON array, which insertLaneSql reads by position (`e->>0` the id, …):
 * every field listed once (a field left out would not be stored: the type refuses it).
 */
const laneEntryPositions = {
  id: 0,
  timestamp: 1,
  actorType: 2,
  actorId: 3,
  actorEmail: 4,
  action: 5,
  resourceType: 6,
  resourceName: 7,
  details: 8,
  ipAddress: 9,
  userAgent: 10,
  result: 11,
  errorMessage: 12,
  externalId: 13,
  digest: 14,
} as const satisfies Record<keyof LaneEntry, number>;
const laneEntryFields = (Object.keys(laneEntryPositions) as (keyof LaneEntry)[]).sort(
  (a, b) => laneEntryPositions[a] - laneEntryPositions[b],
);

/**
 * One statement: the entries into the history lane, in the order given (sealed into the organization's chain by the
 * lane's trigger at its end), and each entry's key into audit_import_keys with the position its entry took, joined
 * back by the entry's id, in externalId order: commits of one organization run side by side, and two of them inserting
 * the same keys take them in one order, so they wait on each other rather than deadlock. Each entry is a JSON array
 * (laneEntryPositions), read by position: about a third fewer bytes than objects naming every field, and parsed faster.
 */
const insertLaneSql = prepared(
  'logbook_audit_history_insert',
  `WITH given AS MATERIALIZED (
     SELECT (e->>0)::uuid AS id, e FROM jsonb_array_elements(:entries::jsonb) AS e
   ),
   added AS (
     INSERT INTO audit_history_lane (id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                     resource_name, details, ip_address, user_agent, result, error_message)
     SELECT g.id, :orgId::uuid, (g.e->>1)::timestamptz, (g.e->>2)::audit_actor_type, (g.e->>3)::uuid, g.e->>4,
            g.e->>5, g.e->>6, g.e->>7, g.e->8, g.e->>9, g.e->>10, (g.e->>11)::audit_result, g.e->>12
       FROM given g
     RETURNING id, pos
   ),
   keyed AS (
     INSERT INTO audit_import_keys (org_id, source_system, external_id, digest, pos)
     SELECT :orgId::uuid, :sourceSystem::text, g.e->>13, g.e->>14, a.pos FROM added a JOIN given g ON g.id = a.id
      ORDER BY g.e->>13
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM added)::int AS added, (SELECT count(*) FROM keyed)::int AS keyed`,
);

/**
 * What one statement of the insert sends at most, counted as the Data API's request carries it: the parameters are
 * JSON texts inside its JSON body, so each quote and backslash takes one byte more. The request takes 4 MiB, its
 * headers and JSON notation included; the 64 KiB left over hold those, the SQL and the other parameters (under 4 KiB).
 */
export const maxInsertBytes = 4 * 1024 * 1024 - 64 * 1024;

/** The bytes a JSON text takes inside another JSON text: its UTF-8 bytes and one escape byte per quote and backslash. */
function escapedBytes(text: string): number {
  let escapes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 34 || code === 92) escapes++;
  }
  return Buffer.byteLength(text) + escapes;
}

/**
 * Consecutive parts [from, to) of a list whose items take these bytes in a request, each part within maxInsertBytes.
 * An item above it alone would still be sent alone: the import refuses such rows before (maxHistoryRowBytes).
 */
function* partsOf(bytes: readonly number[]): Generator<[number, number]> {
  let from = 0;
  while (from < bytes.length) {
    let to = from;
    let size = 0;
    while (to < bytes.length && (to === from || size + bytes[to]! <= maxInsertBytes)) size += bytes[to++]!;
    yield [from, to];
    from = to;
  }
}

/** An entry as the insert sends it: its id, its JSON array, and what that takes in a request. */
export interface PreparedEntry {
  id: string;
  json: string;
  bytes: number;
}

/** An entry turned into its JSON array once, with its size in the Data API's request. */
export function preparedEntry(entry: LaneEntry): PreparedEntry {
  const json = JSON.stringify(laneEntryFields.map((field) => entry[field] ?? null));
  return { id: entry.id, json, bytes: escapedBytes(json) + 1 };
}

/**
 * Inserts the entries into the history lane with their import keys (insertLaneSql): one statement, or, when their
 * JSON passes maxInsertBytes, one statement per consecutive part that fits (in the caller's transaction, in order).
 */
export async function insertHistoryRows(
  tx: Tx,
  orgId: string,
  sourceSystem: string,
  entries: readonly PreparedEntry[],
): Promise<void> {
  for (const [from, to] of partsOf(entries.map((entry) => entry.bytes))) {
    const part = entries.slice(from, to);
    const { rows: counted } = await tx.query<{ added: number; keyed: number }>(insertLaneSql, {
      orgId,
      sourceSystem,
      entries: `[${part.map((entry) => entry.json).join(',')}]`,
    });
    // Every entry has its key, or the statement is rolled back with the transaction.
    if (counted[0]?.added !== part.length || counted[0]?.keyed !== part.length)
      throw new Error(
        `the history import stored ${counted[0]?.added} entries and ${counted[0]?.keyed} keys of ${part.length}`,
      );
  }
}
