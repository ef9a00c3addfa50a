import { type Db, one } from '../db/db.ts';
import { type AuditRow, auditDetailsJoin, auditRowColumns, sizedAuditRowsSql } from './row.ts';

/** A position in an organization's chain: the head, or a retention checkpoint. */
export type ChainLink = { seq: number; checksum: string };

export function readChainHead(db: Db, orgId: string) {
  return one<ChainLink>(db, 'SELECT seq, checksum FROM audit_chain_heads WHERE org_id = :orgId::uuid', { orgId });
}

/** The heads of these organizations, by organization id (an organization without rows has none). */
export async function readChainHeads(db: Db, orgIds: readonly string[]): Promise<Record<string, ChainLink>> {
  if (orgIds.length === 0) return {};
  const { rows } = await db.query<ChainLink & { orgId: string }>(
    `SELECT org_id::text AS "orgId", seq, checksum FROM audit_chain_heads
      WHERE org_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb)) ORDER BY org_id`,
    { orgIds: [...orgIds] },
  );
  return Object.fromEntries(rows.map(({ orgId, seq, checksum }) => [orgId, { seq, checksum }]));
}

/** The latest retention cut: the earliest retained row links to it (DESIGN.md "Audit chain"). */
export function readLatestCheckpoint(db: Db, orgId: string) {
  return one<ChainLink>(
    db,
    'SELECT seq, checksum FROM audit_chain_checkpoints WHERE org_id = :orgId::uuid ORDER BY seq DESC LIMIT 1',
    {
      orgId,
    },
  );
}

/** The first and last chain positions among the organization's rows timestamped within [from, to]. */
export async function readSeqSpan(db: Db, orgId: string, from: Date | string | null, to: Date | string | null) {
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
 * in seq order, at most `rows` rows and, given `bytes`, about that many bytes (always at least one row).
 */
export async function readChainPage(
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

/**
 * A row ready for audit_logs: its details as an object, its timestamp null for now(); the database adds the id, the
 * sealing trigger seq, checksum and prevChecksum.
 */
export type AuditRowInput = Omit<AuditRow, 'id' | 'seq' | 'timestamp' | 'details' | 'prevChecksum' | 'checksum'> & {
  timestamp: string | null;
  details: Record<string, unknown>;
};

/**
 * Appends rows in one statement of its own transaction (DESIGN.md "Audit chain": never inside
 * the business transaction). Rows are sorted by organization so concurrent batches take the
 * organizations' locks in one order and cannot deadlock.
 */
export async function insertAuditRows(
  db: Db,
  rows: AuditRowInput[],
): Promise<{ id: string; orgId: string; seq: number }[]> {
  const sorted = [...rows].sort((a, b) => (a.orgId < b.orgId ? -1 : a.orgId > b.orgId ? 1 : 0));
  const { rows: sealed } = await db.query<{ id: string; orgId: string; seq: number }>(
    `INSERT INTO audit_logs (org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id,
                             resource_name, details, ip_address, user_agent, result, error_message)
     SELECT r."orgId", coalesce(r.timestamp, now()), r."actorType", r."actorId", r."actorEmail", r.action, r."resourceType",
            r."resourceId", r."resourceName", r.details, r."ipAddress", r."userAgent", r.result, r."errorMessage"
       FROM jsonb_to_recordset(:rows::jsonb) AS r("orgId" uuid, timestamp timestamptz, "actorType" audit_actor_type,
            "actorId" uuid, "actorEmail" text, action text, "resourceType" text, "resourceId" uuid, "resourceName" text, details jsonb,
            "ipAddress" text, "userAgent" text, result audit_result, "errorMessage" text)
     RETURNING id::text AS id, org_id::text AS "orgId", seq`,
    { rows: sorted },
  );
  return sealed;
}
