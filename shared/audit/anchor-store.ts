import { type Db, one } from '../db/db.ts';
import type { AnchorFields } from './anchor-signing.ts';
import type { AuditScope } from './read-store.ts';

export type Anchor = AnchorFields & {
  id: string;
  /** Ed25519 signature of the canonical payload, base64. */
  signature: string;
};

const anchorColumns = `id::text AS id, org_id::text AS "orgId", seq, checksum, first_retained_seq AS "firstRetainedSeq",
  boundary_checksum AS "boundaryChecksum", org_count AS "orgCount", orgs_digest AS "orgsDigest",
  to_char(anchored_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "anchoredAt", key_id AS "keyId", signature`;

/** Appends a signed anchor (the worker's role). */
export async function insertAnchor(db: Db, anchor: AnchorFields & { signature: string }): Promise<Anchor> {
  const saved = await one<Anchor>(
    db,
    `INSERT INTO audit_anchors (org_id, seq, checksum, first_retained_seq, boundary_checksum, org_count, orgs_digest, anchored_at, key_id, signature)
     VALUES (:orgId::uuid, :seq::bigint, :checksum::text, :firstRetainedSeq::bigint, :boundaryChecksum::text, :orgCount::int, :orgsDigest::text,
             :anchoredAt::timestamptz, :keyId::text, :signature::text)
     RETURNING ${anchorColumns}`,
    { ...anchor },
  );
  return saved!;
}

/** The organization's newest anchor (by time, then seq). */
export function selectLatestAnchor(db: Db, orgId: string): Promise<Anchor | undefined> {
  return one<Anchor>(
    db,
    `SELECT ${anchorColumns} FROM audit_anchors WHERE org_id = :orgId::uuid ORDER BY anchored_at DESC, seq DESC LIMIT 1`,
    { orgId },
  );
}

/** The newest anchor of every organization (or of these) that has one, by organization id. */
export async function selectLatestAnchors(db: Db, orgIds?: readonly string[]): Promise<Map<string, Anchor>> {
  const only = orgIds ? 'WHERE org_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb))' : '';
  const { rows } = await db.query<Anchor>(
    `SELECT DISTINCT ON (org_id) ${anchorColumns} FROM audit_anchors ${only} ORDER BY org_id, anchored_at DESC, seq DESC`,
    orgIds ? { orgIds: [...orgIds] } : {},
  );
  return new Map(rows.map((row) => [row.orgId, row]));
}

type OrgScope = Pick<AuditScope, 'orgs' | 'params'>;
const scopedAnchors = (scope: OrgScope) =>
  `FROM audit_anchors WHERE org_id IN (SELECT o.id FROM organizations o WHERE ${scope.orgs})`;

/** A page of the anchors of the organizations in scope, newest first. */
export async function selectAnchors(db: Db, scope: OrgScope, page: { offset: number; limit: number }) {
  const { rows } = await db.query<Anchor>(
    `SELECT ${anchorColumns} ${scopedAnchors(scope)} ORDER BY anchored_at DESC, org_id, seq DESC OFFSET :offset::int LIMIT :limit::int`,
    { ...scope.params, ...page },
  );
  return rows;
}

export async function countAnchors(db: Db, scope: OrgScope): Promise<number> {
  const counted = await one<{ n: number }>(db, `SELECT count(*)::int AS n ${scopedAnchors(scope)}`, scope.params);
  return counted!.n;
}

/** Records the organizations an anchor run's digest stands for, once per distinct set (the watch's role). */
export async function insertAnchorOrgSet(db: Db, orgsDigest: string, orgIds: readonly string[]): Promise<void> {
  await db.query(
    `INSERT INTO audit_anchor_org_sets (orgs_digest, org_ids)
     SELECT :orgsDigest::text, array(SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb))
     ON CONFLICT (orgs_digest) DO NOTHING`,
    { orgsDigest, orgIds: [...orgIds] },
  );
}

/** Every recorded organization set that a signed anchor carries the digest of, oldest first. */
export async function selectAnchoredOrgSets(db: Db): Promise<{ orgsDigest: string; orgIds: string[] }[]> {
  const { rows } = await db.query<{ orgsDigest: string; orgIds: string[] }>(
    `SELECT s.orgs_digest AS "orgsDigest", array(SELECT unnest(s.org_ids)::text) AS "orgIds" FROM audit_anchor_org_sets s
      WHERE EXISTS (SELECT FROM audit_anchors a WHERE a.orgs_digest = s.orgs_digest) ORDER BY s.recorded_at, s.orgs_digest`,
  );
  return rows;
}

/**
 * Whether the organization was in a set a signed anchor carries, has no chain head now, and no
 * `organization.delete` audit row says it was deleted: its chain was wiped.
 */
export async function selectOrganizationMissing(db: Db, orgId: string): Promise<boolean> {
  const found = await one<{ missing: boolean }>(
    db,
    `SELECT EXISTS (SELECT FROM audit_anchor_org_sets s
                     WHERE s.org_ids @> ARRAY[:orgId::uuid]
                       AND EXISTS (SELECT FROM audit_anchors a WHERE a.orgs_digest = s.orgs_digest))
        AND NOT EXISTS (SELECT FROM audit_chain_heads h WHERE h.org_id = :orgId::uuid)
        AND NOT EXISTS (SELECT FROM audit_entries e WHERE e.action = 'organization.delete' AND e.resource_id = :orgId::uuid)
        AS missing`,
    { orgId },
  );
  return found!.missing;
}
