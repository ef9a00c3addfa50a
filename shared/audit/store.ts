import { type Db, one, prepared } from '../db/db.ts';
import type { AnchorFields, SignedCheckpoint } from './anchor-signing.ts';
import {
  type AuditRow,
  auditDetailsJoin,
  auditRowBytesSql,
  auditRowColumns,
  canonicalTimestampSql,
  sizedAuditRowsSql,
} from './row.ts';
import { auditSealed } from './sealed.ts';

/** A position in an organization's chain: the head, or a retention checkpoint. */
export type ChainLink = { seq: number; checksum: string };

export function selectChainHead(db: Db, orgId: string) {
  return one<ChainLink>(db, 'SELECT seq, checksum FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
}

/** The heads of these organizations, by organization id (an organization without rows has none). */
export async function selectChainHeads(db: Db, orgIds: readonly string[]): Promise<Record<string, ChainLink>> {
  if (orgIds.length === 0) return {};
  const { rows } = await db.query<ChainLink & { orgId: string }>(
    `SELECT org_id::text AS "orgId", seq, checksum FROM audit_chain_heads
      WHERE org_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb)) ORDER BY org_id`,
    { orgIds: [...orgIds] },
  );
  return Object.fromEntries(rows.map(({ orgId, seq, checksum }) => [orgId, { seq, checksum }]));
}

/** A retention cut as recorded by the database, with the worker's signature of it (`signed` null: none). */
export type CheckpointRecord = ChainLink & { signed: Omit<SignedCheckpoint, 'orgId' | 'seq' | 'checksum'> | null };

const checkpointSql = (where: string) => `SELECT DISTINCT ON (c.org_id) c.org_id::text AS "orgId", c.seq, c.checksum,
    CASE WHEN s.signature IS NULL THEN NULL ELSE jsonb_build_object('lastTimestamp', s.last_timestamp,
      'retentionDays', s.retention_days, 'asOf', to_char(s.as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'anchored', s.anchored, 'keyId', s.key_id, 'signature', s.signature) END AS signed
  FROM audit_chain_checkpoints c LEFT JOIN audit_checkpoint_signatures s ON s.org_id = c.org_id AND s.seq = c.seq
  WHERE ${where} ORDER BY c.org_id, c.seq DESC`;

/** The latest retention cut: the earliest retained row links to it (docs/audit.md). */
export async function selectLatestCheckpoint(db: Db, orgId: string): Promise<CheckpointRecord | undefined> {
  const row = await one<CheckpointRecord & { orgId: string }>(db, checkpointSql('c.org_id = :orgId::uuid'), { orgId });
  if (!row) return undefined;
  const { orgId: _, ...checkpoint } = row;
  return checkpoint;
}

/** The latest retention cut of each of these organizations that has one, by organization id. */
export async function selectLatestCheckpoints(
  db: Db,
  orgIds: readonly string[],
): Promise<Record<string, CheckpointRecord>> {
  if (orgIds.length === 0) return {};
  const { rows } = await db.query<CheckpointRecord & { orgId: string }>(
    checkpointSql('c.org_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb))'),
    { orgIds: [...orgIds] },
  );
  return Object.fromEntries(rows.map(({ orgId, ...checkpoint }) => [orgId, checkpoint]));
}

/** The signed evidence of an organization's chain, as an export carries it for the offline check. */
export type ChainEvidence = {
  checkpoint: CheckpointRecord | null;
  anchor: (AnchorFields & { id: string; signature: string }) | null;
  /** Where the retained chain records the organization's first anchor; null when it does not. */
  anchoredRecordSeq: number | null;
};

/** The action of the chain's record of an organization's first anchor (written by the integrity watch). */
export const anchoredAction = 'system.audit.anchored';

/** Where the organization's retained chain records that it was anchored, if it does (0013_audit_signed_checkpoints.sql). */
export async function selectAnchoredRecord(db: Db, orgId: string): Promise<number | undefined> {
  const found = await one<{ seq: number }>(
    db,
    `SELECT seq FROM audit_logs WHERE org_id = :orgId::uuid AND action = '${anchoredAction}' ORDER BY seq LIMIT 1`,
    { orgId },
  );
  return found?.seq;
}

/**
 * An entry of the organization that no link seals (one written with the triggers off): no reader shows it, and the
 * verifier reports it. Only looked for when the organization has more entries than `linked`, the entries its chain
 * walk found (one count off the organization's index, not a join of the whole trail).
 */
export async function selectUnsealedEntry(db: Db, orgId: string, linked: number): Promise<string | undefined> {
  const counted = await one<{ n: number }>(
    db,
    'SELECT count(*)::bigint AS n FROM audit_entries WHERE org_id = :orgId::uuid',
    { orgId },
  );
  if (counted!.n <= linked) return undefined;
  const found = await one<{ id: string }>(
    db,
    `SELECT e.id::text AS id FROM audit_entries e
      WHERE e.org_id = :orgId::uuid AND NOT EXISTS (SELECT FROM audit_chain_links l WHERE l.pos = e.pos AND l.org_id = e.org_id)
      ORDER BY e.pos LIMIT 1`,
    { orgId },
  );
  return found?.id;
}

/**
 * Organizations with entries but no chain head: their entries were never sealed (written with the triggers off), so
 * the integrity watch verifies them too. One probe of the entries' index per organization without a head.
 */
export async function selectHeadlessOrganizations(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ orgId: string }>(
    `SELECT o.id::text AS "orgId" FROM organizations o
      WHERE NOT EXISTS (SELECT FROM audit_chain_heads h WHERE h.org_id = o.id)
        AND EXISTS (SELECT FROM audit_entries e WHERE e.org_id = o.id)
      ORDER BY o.id`,
  );
  return rows.map((row) => row.orgId);
}

/** The first and last chain positions among the organization's rows timestamped within [from, to]. */
export async function selectSeqSpan(db: Db, orgId: string, from: Date | string | null, to: Date | string | null) {
  const span = await one<{ first: number | null; last: number | null }>(
    db,
    `SELECT min(seq) AS first, max(seq) AS last FROM audit_logs
      WHERE org_id = :orgId::uuid
        AND (:from::timestamptz IS NULL OR timestamp >= :from::timestamptz)
        AND (:to::timestamptz IS NULL OR timestamp <= :to::timestamptz)`,
    { orgId, from, to },
  );
  return span?.first == null || span.last == null ? undefined : { first: span.first, last: span.last };
}

/**
 * The next page of the chain after `afterSeq` (null: from its very start) up to `untilSeq` (null: its end),
 * in seq order, at most `rows` rows and, given `bytes`, about that many bytes (always at least one row). Read
 * through the audit_logs view: the links in seq order, each joined to its entry by one probe of its pos;
 * joining a page's entries as one range instead measured slower (a hash join of the page, 54 against 48 ms per
 * 5,000 rows).
 */
export async function selectChainPage(
  db: Db,
  orgId: string,
  page: { afterSeq: number | null; untilSeq: number | null; rows: number; bytes?: number },
) {
  const range = `a.org_id = :orgId::uuid
            AND a.seq > coalesce(:afterSeq::bigint, -9223372036854775807 - 1)
            AND a.seq <= coalesce(:untilSeq::bigint, 9223372036854775807)`;
  const params = { orgId, afterSeq: page.afterSeq, untilSeq: page.untilSeq, rows: page.rows };
  if (page.bytes === undefined) {
    const { rows } = await db.query<AuditRow>(
      `SELECT ${auditRowColumns} FROM audit_logs a ${auditDetailsJoin} WHERE ${range} ORDER BY a.seq LIMIT :rows::int`,
      params,
    );
    return rows;
  }
  const { rows } = await db.query<AuditRow>(
    sizedAuditRowsSql(`SELECT a.* FROM audit_logs a WHERE ${range} ORDER BY a.seq LIMIT :rows::int`, 'a.seq'),
    { ...params, bytes: page.bytes },
  );
  return rows;
}

/** A link of an organization's chain: its position, the entry it seals (pos) and the checksums it records. */
export type ChainLinkRow = { seq: number; pos: number; checksum: string; prevChecksum: string | null };

/**
 * The organization's links after `afterSeq` (null: from its start) up to `untilSeq` (null: its end), in seq order, at
 * most `rows`: one range of the links' primary key, the narrow half of a chain page (docs/audit.md "Verifying").
 */
export async function selectChainLinks(
  db: Db,
  orgId: string,
  page: { afterSeq: number | null; untilSeq: number | null; rows: number },
): Promise<ChainLinkRow[]> {
  const { rows } = await db.query<ChainLinkRow>(
    `SELECT seq, pos, checksum, prev_checksum AS "prevChecksum" FROM audit_chain_links
      WHERE org_id = :orgId::uuid
        AND seq > coalesce(:afterSeq::bigint, -9223372036854775807 - 1)
        AND seq <= coalesce(:untilSeq::bigint, 9223372036854775807)
      ORDER BY seq LIMIT :rows::int`,
    { orgId, afterSeq: page.afterSeq, untilSeq: page.untilSeq, rows: page.rows },
  );
  return rows;
}

/** An entry as the chain's checksum covers it, without the link's values (seq, prevChecksum, checksum). */
export type ChainEntry = Omit<AuditRow, 'seq' | 'prevChecksum' | 'checksum'> & { pos: number };

/** The SELECT list of a ChainEntry, over `a` (audit_entries rows) and `d` (auditDetailsJoin). */
const entryColumns = `a.pos, a.id::text AS id, a.org_id::text AS "orgId", ${canonicalTimestampSql('a.timestamp')} AS timestamp,
  a.actor_type::text AS "actorType", a.actor_id::text AS "actorId", a.actor_email AS "actorEmail", a.action,
  a.resource_type AS "resourceType", a.resource_id::text AS "resourceId", a.resource_name AS "resourceName", d.details,
  a.ip_address AS "ipAddress", a.user_agent AS "userAgent", a.result::text AS result, a.error_message AS "errorMessage"`;

/**
 * The organization's entries at these positions (ascending), in pos order: one ordered pass over the entries' pos
 * index, a range when the positions lie close together (one organization's steady trail), else one probe per
 * position. Given `bytes`, cut where the running size passes it, always at least one entry.
 */
export async function selectChainEntries(
  db: Db,
  orgId: string,
  positions: readonly number[],
  bytes?: number,
): Promise<ChainEntry[]> {
  if (positions.length === 0) return [];
  const first = positions[0]!;
  const last = positions.at(-1)!;
  // Entries of other organizations between them are read and dropped: a range pays while they are few.
  const dense = last - first < 2 * positions.length;
  const where = dense
    ? 'a.org_id = :orgId::uuid AND a.pos BETWEEN :first::bigint AND :last::bigint'
    : `a.org_id = :orgId::uuid AND a.pos = ANY (ARRAY(SELECT value::bigint FROM jsonb_array_elements_text(:positions::jsonb)))`;
  const params = {
    orgId,
    ...(dense ? { first, last } : { positions: [...positions] }),
    ...(bytes !== undefined && { bytes }),
  };
  const sql =
    bytes === undefined
      ? `SELECT ${entryColumns} FROM audit_entries a ${auditDetailsJoin} WHERE ${where} ORDER BY a.pos`
      : `SELECT ${entryColumns}
           FROM (
             SELECT a.*, d.details AS details_text,
                    sum(${auditRowBytesSql}) OVER (ORDER BY a.pos ROWS UNBOUNDED PRECEDING) - (${auditRowBytesSql}) AS before
               FROM audit_entries a ${auditDetailsJoin} WHERE ${where}
           ) a CROSS JOIN LATERAL (SELECT a.details_text AS details) d
          WHERE a.before < :bytes::int
          ORDER BY a.pos`;
  const { rows } = await db.query<ChainEntry>(sql, params);
  return rows;
}

/**
 * A row ready for audit_entries: its details as an object, its timestamp null for now(); the database adds the id and
 * pos, and the sealing trigger its link (seq, checksum and prevChecksum) at the end of the statement.
 */
export type AuditRowInput = Omit<AuditRow, 'id' | 'seq' | 'timestamp' | 'details' | 'prevChecksum' | 'checksum'> & {
  timestamp: string | null;
  details: Record<string, unknown>;
};

/** Prepared once per connection: parsed once, and planned once after its first five runs. */
const insertSql = prepared(
  'logbook_audit_insert',
  `INSERT INTO audit_entries (org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id,
                             resource_name, details, ip_address, user_agent, result, error_message)
     SELECT r."orgId", coalesce(r.timestamp, now()), r."actorType", r."actorId", r."actorEmail", r.action, r."resourceType",
            r."resourceId", r."resourceName", r.details, r."ipAddress", r."userAgent", r.result, r."errorMessage"
       FROM jsonb_to_recordset(:rows::jsonb) AS r("orgId" uuid, timestamp timestamptz, "actorType" audit_actor_type,
            "actorId" uuid, "actorEmail" text, action text, "resourceType" text, "resourceId" uuid, "resourceName" text, details jsonb,
            "ipAddress" text, "userAgent" text, result audit_result, "errorMessage" text)
     RETURNING id::text AS id, org_id::text AS "orgId", pos`,
);

/**
 * Moves audit intents into the trail (migration 0065's audit_intents_seal): deletes them and inserts their entries in
 * one statement, sealed by the chain's trigger at its end. An intent another statement moved meanwhile is not found,
 * so each becomes one entry; one another statement is moving now is waited for.
 */
const sealIdsSql = prepared(
  'logbook_audit_seal_intents',
  `SELECT sealed_id::text AS id, sealed_org::text AS "orgId", sealed_pos AS pos FROM audit_intents_seal(:ids::jsonb)`,
);

/** Seals these committed intents (their ids): the request that wrote them, once its change has committed. */
export async function sealAuditIntents(db: Db, ids: string[]): Promise<AppendedRow[]> {
  const { rows } = await db.query<AppendedRow>(sealIdsSql, { ids });
  await auditSealed(db, rows);
  return rows;
}

/**
 * Seals up to `limit` of the oldest committed intents after `after` that no other statement is moving (the sweep,
 * audit_intents_sweep): those a process left behind when it stopped, or lost its database, between a change's commit
 * and its seal. Answers how many it sealed.
 */
export async function sealOldestIntents(db: Db, limit: number, after = '0'): Promise<number> {
  const { rows } = await db.query<{ orgId: string }>(
    'SELECT sealed_org::text AS "orgId" FROM audit_intents_sweep(:after::bigint, :limit::int)',
    { limit, after },
  );
  await auditSealed(db, rows);
  return rows.length;
}

/** The ids of up to `limit` waiting intents after `after`, oldest first. */
export async function selectWaitingIntentIds(db: Db, limit: number, after: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id::text AS id FROM audit_intents WHERE id > :after::bigint ORDER BY id LIMIT :limit::int',
    { limit, after },
  );
  return rows.map((row) => row.id);
}

/** A row as appended: pos orders the rows of one statement as they were sent, and as the chain seals them. */
export type AppendedRow = { id: string; orgId: string; pos: number };

/**
 * Appends rows in one statement of its own transaction (never inside a change's transaction, which writes intents
 * instead: docs/audit.md "Atomic audit"), sealed by the database when the statement ends. Rows are sorted by
 * organization (stably), as the seal takes them, so the rows of each organization keep their order.
 */
export async function insertAuditRows(db: Db, rows: AuditRowInput[]): Promise<AppendedRow[]> {
  const sorted = [...rows].sort((a, b) => (a.orgId < b.orgId ? -1 : a.orgId > b.orgId ? 1 : 0));
  const { rows: sealed } = await db.query<AppendedRow>(insertSql, { rows: sorted });
  await auditSealed(db, sealed);
  return sealed;
}
