/**
 * An audit row as the service reads it, in one place: its type, its SELECT list and its size in a result.
 * Every reader (chain pages, lists, one entry, exports) selects these columns, so each sees the values the checksum
 * covers (docs/audit.md, canonical payload v1).
 */
import type { z } from 'zod';
import type { auditExportRow } from './schemas.ts';

/**
 * A sealed row: the canonical values of the chain as text the way PostgreSQL renders them (the timestamp in UTC
 * with microseconds, details as jsonb text), and its checksum. An export's rows are these (auditExportRow).
 */
export type AuditRow = z.output<typeof auditExportRow>;

/** The canonical timestamp text (docs/audit.md), formatted by the database from the stored microseconds. */
export const canonicalTimestampSql = (column: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** `d.details`: the jsonb text of `a.details`, worked out once per row for the SELECT list and the row's size. */
export const auditDetailsJoin = 'CROSS JOIN LATERAL (SELECT a.details::text AS details) d';

/** The SELECT list of an AuditRow, over `a` (audit_logs rows: entries with their links) and `d` (auditDetailsJoin). */
export const auditRowColumns = `a.id::text AS id, a.org_id::text AS "orgId", a.seq, ${canonicalTimestampSql('a.timestamp')} AS timestamp,
  a.actor_type::text AS "actorType", a.actor_id::text AS "actorId", a.actor_email AS "actorEmail", a.action,
  a.resource_type AS "resourceType", a.resource_id::text AS "resourceId", a.resource_name AS "resourceName", d.details,
  a.ip_address AS "ipAddress", a.user_agent AS "userAgent", a.result::text AS result, a.error_message AS "errorMessage",
  a.prev_checksum AS "prevChecksum", a.checksum`;

// docs/ARCHITECTURE.md: results stay under the Data API's 1 MiB; a row's unbounded texts plus an allowance for its fixed fields and framing.
export const auditRowBytesSql = `octet_length(d.details) + coalesce(octet_length(a.user_agent), 0) + coalesce(octet_length(a.error_message), 0)
  + coalesce(octet_length(a.actor_email), 0) + coalesce(octet_length(a.resource_name), 0) + 1024`;

/**
 * `source`, a query of audit_entries rows (a page of them), with each entry's chain link: audit_logs rows. Joining
 * after the page is cut keeps the link lookups to the page's rows; an entry without a link was never sealed, and no
 * reader shows it (docs/audit.md).
 */
export const linkedSql = (source: string) => `SELECT p.*, l.seq, l.checksum, l.prev_checksum
  FROM (${source}) p JOIN audit_chain_links l ON l.pos = p.pos AND l.org_id = p.org_id`;

/**
 * The AuditRows of `source` (a query of audit_logs rows, limited) in `order`, cut where their running size passes
 * `:bytes`: always at least one row. The running sum costs about as much again as reading the rows. `extra` is
 * added to the SELECT list.
 */
export function sizedAuditRowsSql(source: string, order: string, extra = ''): string {
  return `SELECT ${auditRowColumns}${extra}
       FROM (
         SELECT a.*, d.details AS details_text,
                sum(${auditRowBytesSql}) OVER (ORDER BY ${order} ROWS UNBOUNDED PRECEDING) - (${auditRowBytesSql}) AS before
           FROM (${source}) a ${auditDetailsJoin}
       ) a CROSS JOIN LATERAL (SELECT a.details_text AS details) d
      WHERE a.before < :bytes::int
      ORDER BY ${order}`;
}
