import { type Db, one } from '../db/db.ts';
import type { IdempotencyTable } from '../db/idempotency.ts';
import type { SignedCheckpoint } from './anchor-signing.ts';
import { historyMoveLockSql } from './history-lane.ts';
import { canonicalTimestampSql } from './row.ts';
import { anchoredAction } from './store.ts';

/** An organization's audit retention policy as stored. */
export type RetentionPolicyRow = {
  orgId: string;
  retentionDays: number;
  archiveToS3: boolean;
  lastCleanupAt: Date | null;
};

const policyColumns = `p.org_id::text AS "orgId", p.retention_days AS "retentionDays", p.archive_to_s3 AS "archiveToS3", p.last_cleanup_at AS "lastCleanupAt"`;

export async function insertRetentionPolicy(tx: Db, orgId: string, retentionDays: number): Promise<void> {
  await tx.query(
    'INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, :retentionDays::int)',
    { orgId, retentionDays },
  );
}

/** The organization's policy; `lock` holds it until commit, so concurrent saves record their own before values. */
export function selectRetentionPolicy(db: Db, orgId: string, lock = false) {
  return one<RetentionPolicyRow>(
    db,
    `SELECT ${policyColumns} FROM audit_retention_policies p WHERE p.org_id = :orgId::uuid${lock ? ' FOR UPDATE' : ''}`,
    {
      orgId,
    },
  );
}

/** Saves the retention of the organization's policy, creating the policy when it has none. */
export async function upsertRetentionPolicy(db: Db, orgId: string, retentionDays: number): Promise<RetentionPolicyRow> {
  const saved = await one<RetentionPolicyRow>(
    db,
    `INSERT INTO audit_retention_policies AS p (org_id, retention_days) VALUES (:orgId::uuid, :retentionDays::int)
     ON CONFLICT (org_id) DO UPDATE SET retention_days = excluded.retention_days, updated_at = now()
     RETURNING ${policyColumns}`,
    { orgId, retentionDays },
  );
  return saved!;
}

/** An organization the worker prunes: its policy and the moment before which its rows have expired. */
export type RetentionTarget = {
  orgId: string;
  orgName: string;
  retentionDays: number;
  /** `asOf` minus retentionDays: rows timestamped before it are older than the window. */
  cutoff: Date;
};

/** The organizations with a policy (the others are skipped), soft-deleted ones included. */
export async function selectRetentionTargets(db: Db, asOf: Date): Promise<RetentionTarget[]> {
  const { rows } = await db.query<RetentionTarget>(
    `SELECT p.org_id::text AS "orgId", o.name AS "orgName", p.retention_days AS "retentionDays",
            :asOf::timestamptz - make_interval(days => p.retention_days) AS cutoff
       FROM audit_retention_policies p JOIN organizations o ON o.id = p.org_id
      ORDER BY p.org_id`,
    { asOf },
  );
  return rows;
}

/** Organizations without a policy are skipped; their rows accumulate. */
export async function countOrganizationsWithoutPolicy(db: Db): Promise<number> {
  const counted = await one<{ n: number }>(
    db,
    'SELECT count(*)::int AS n FROM organizations o WHERE NOT EXISTS (SELECT 1 FROM audit_retention_policies p WHERE p.org_id = o.id)',
  );
  return counted!.n;
}

/**
 * The first row, in chain order, that is not older than `cutoff`: the cut stops before it. Rows can carry late or
 * imported timestamps, so a younger row may precede older ones; a prefix cut never passes it.
 */
const firstKeptSeqSql = `(SELECT k.seq FROM audit_logs k WHERE k.org_id = :orgId::uuid AND k.timestamp >= :cutoff::timestamptz ORDER BY k.seq LIMIT 1)`;

/** What a cut as of `cutoff` would delete now: the oldest contiguous rows older than it. */
export async function selectExpiredPrefix(db: Db, orgId: string, cutoff: Date) {
  const prefix = await one<{ rows: number; fromSeq: number | null; throughSeq: number | null }>(
    db,
    `SELECT count(*)::int AS rows, min(a.seq) AS "fromSeq", max(a.seq) AS "throughSeq"
       FROM audit_logs a
      WHERE a.org_id = :orgId::uuid AND a.seq < coalesce(${firstKeptSeqSql}, 9223372036854775807)`,
    { orgId, cutoff },
  );
  return prefix!;
}

/** The last row of a cut, and whether its organization had been anchored: what the worker signs with it. */
export type Cut = { orgId: string; seq: number; checksum: string; lastTimestamp: string; anchored: boolean };

/**
 * Deletes the next batch of the expired prefix: of the organization's `batchRows` oldest rows, those before the first
 * row not older than `cutoff`. Runs in its own short transaction as logbook_audit_admin with the session flag set for
 * that transaction only (SET LOCAL). The links and their entries go in one statement: the database refuses anything
 * but a prefix cut of the links, and an entry deleted without its link, and records the checkpoint itself
 * (0003_audit.sql, 0060_audit_chain_links.sql), and the worker's signature of that checkpoint (`sign`) is stored in the same transaction, so no
 * cut is ever left unsigned. Rows appended meanwhile take later positions, so they are never part of the
 * batch. `afterSeq` is the previous batch's last seq: no row is left at or below it, and starting the index scans
 * there skips the dead entries of the batches before (measured: without it, 1,000,000 rows prune at a third of the
 * rate).
 */
export function deleteExpiredBatch(
  db: Db,
  orgId: string,
  cutoff: Date,
  batchRows: number,
  afterSeq: number | null,
  sign: (cut: Cut) => SignedCheckpoint,
) {
  return db.transaction(async (tx) => {
    await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
    // Never beside a move of the history lane (audit_history_move holds the same lock): rows a move committed after this
    // cut's snapshot would be entries left behind with their links deleted.
    await tx.query(historyMoveLockSql);
    // Anchored: an anchor, the chain's record of the first one, or the previous signed cut says so.
    const evidence = await one<{ anchored: boolean }>(
      tx,
      `SELECT EXISTS (SELECT 1 FROM audit_anchors WHERE org_id = :orgId::uuid)
           OR EXISTS (SELECT 1 FROM audit_logs WHERE org_id = :orgId::uuid AND action = '${anchoredAction}')
           OR coalesce((SELECT s.anchored FROM audit_checkpoint_signatures s WHERE s.org_id = :orgId::uuid
                         ORDER BY s.seq DESC LIMIT 1), false) AS anchored`,
      { orgId },
    );
    const deleted = await one<{
      rows: number;
      fromSeq: number | null;
      throughSeq: number | null;
      checksum: string | null;
      lastTimestamp: string | null;
    }>(
      tx,
      `WITH oldest AS (
         SELECT o.seq, o.timestamp FROM audit_logs o
          WHERE o.org_id = :orgId::uuid AND o.seq > coalesce(:afterSeq::bigint, 0)
          ORDER BY o.seq LIMIT :batchRows::int
       ), cut AS (
         SELECT coalesce((SELECT min(y.seq) - 1 FROM oldest y WHERE y.timestamp >= :cutoff::timestamptz), (SELECT max(x.seq) FROM oldest x)) AS through
       ), deleted AS (
         DELETE FROM audit_chain_links l USING cut
          WHERE l.org_id = :orgId::uuid AND l.seq > coalesce(:afterSeq::bigint, 0) AND l.seq <= cut.through
          RETURNING l.seq, l.pos, l.checksum
       ), removed AS (
         DELETE FROM audit_entries e USING deleted d WHERE e.pos = d.pos AND e.org_id = :orgId::uuid
          RETURNING e.pos, ${canonicalTimestampSql('e.timestamp')} AS "lastTimestamp"
       ), last AS (
         SELECT l.checksum, r."lastTimestamp" FROM deleted l LEFT JOIN removed r ON r.pos = l.pos ORDER BY l.seq DESC LIMIT 1
       )
       SELECT count(*)::int AS rows, min(seq) AS "fromSeq", max(seq) AS "throughSeq",
              (SELECT checksum FROM last) AS checksum, (SELECT "lastTimestamp" FROM last) AS "lastTimestamp"
         FROM deleted`,
      { orgId, cutoff, batchRows, afterSeq },
    );
    const { rows, fromSeq, throughSeq, checksum, lastTimestamp } = deleted!;
    if (rows > 0) {
      const signed = sign({
        orgId,
        seq: throughSeq!,
        checksum: checksum!,
        lastTimestamp: lastTimestamp!,
        anchored: evidence!.anchored,
      });
      await tx.query(
        `INSERT INTO audit_checkpoint_signatures (org_id, seq, last_timestamp, retention_days, as_of, anchored, key_id, signature)
         VALUES (:orgId::uuid, :seq::bigint, :lastTimestamp::text, :retentionDays::int, :asOf::timestamptz,
                 :anchored::boolean, :keyId::text, :signature::text)`,
        { ...signed },
      );
    }
    return { rows, fromSeq, throughSeq };
  });
}

/** lastCleanupAt: the worker applied the organization's policy now. */
export async function recordCleanup(db: Db, orgId: string): Promise<void> {
  await db.query('UPDATE audit_retention_policies SET last_cleanup_at = now() WHERE org_id = :orgId::uuid', { orgId });
}

/**
 * Deletes up to `batchRows` idempotency keys of `table` created before `before` (0012_audit_ingest_purge.sql,
 * 0062_idempotency_keys.sql); the number deleted. Not audit rows: no session flag, no checkpoint.
 */
export async function deleteStaleIngestKeys(
  db: Db,
  table: IdempotencyTable,
  before: Date,
  batchRows: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM ${table} r USING (
       SELECT principal_type, principal_id, idempotency_key FROM ${table}
        WHERE created_at < :before::timestamptz ORDER BY created_at LIMIT :batchRows::int
     ) old
     WHERE (r.principal_type, r.principal_id, r.idempotency_key) = (old.principal_type, old.principal_id, old.idempotency_key)`,
    { before, batchRows },
  );
  return rowCount;
}
