/**
 * Signed anchors of the audit chain (issue 4 "Integrity watch", DESIGN.md "Audit chain"). A bare hash chain proves
 * nothing against whoever can rewrite the database: every checksum can be recomputed. An anchor signs, with an
 * Ed25519 key the database never holds, an organization's head, its retention boundary and the set of organizations
 * with a chain; the public key is published (GET /api/v1/audit-logs/anchors), so anyone holding a copy of an anchor
 * can prove the chain up to it is unchanged (verifyChain's `anchor` option).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { pageQuery, pagination, paginationSchema } from '../db/paging.ts';
import { auditScope } from './read-store.ts';

export const anchorVersion = 'logbook-anchor-v1';

/** What an anchor signs. */
export type AnchorFields = {
  orgId: string;
  /** The chain head: its seq and checksum. */
  seq: number;
  checksum: string;
  /** The retention boundary: the first position the chain holds, and the checksum the row there links to (null: none). */
  firstRetainedSeq: number;
  boundaryChecksum: string | null;
  /** The organizations with a chain head at the time: how many, and sha256 of their sorted ids joined by '\n'. */
  orgCount: number;
  orgsDigest: string;
  /** ISO 8601 with milliseconds, UTC. */
  anchoredAt: string;
  keyId: string;
};

export type Anchor = AnchorFields & {
  id: string;
  /** Ed25519 signature of the canonical payload, base64. */
  signature: string;
};

/** The canonical anchor payload v1: 'logbook-anchor-v1', then per field '\n' and '~' (null) or '<UTF-8 bytes>:<value>'. */
export function anchorPayload(fields: AnchorFields): string {
  const values = [
    fields.orgId,
    fields.seq,
    fields.checksum,
    fields.firstRetainedSeq,
    fields.boundaryChecksum,
    fields.orgCount,
    fields.orgsDigest,
    fields.anchoredAt,
    fields.keyId,
  ];
  let payload = anchorVersion;
  for (const value of values)
    payload += value === null ? '\n~' : `\n${Buffer.byteLength(String(value), 'utf8')}:${value}`;
  return payload;
}

/** The digest of the organizations with a chain: sha256 (hex) of their ids, sorted, joined by '\n'. */
export function orgsDigest(orgIds: readonly string[]): string {
  return createHash('sha256')
    .update([...orgIds].sort().join('\n'), 'utf8')
    .digest('hex');
}

/** The first 16 hex digits of the SHA-256 of the public key (SPKI DER). */
export function anchorKeyId(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export function publicKeyPem(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

export function signAnchor(fields: AnchorFields, privateKey: KeyObject): string {
  return sign(null, Buffer.from(anchorPayload(fields), 'utf8'), privateKey).toString('base64');
}

/** Whether the anchor's signature is valid for its fields under this (public or private) key. */
export function verifyAnchorSignature(anchor: AnchorFields & { signature: string }, key: KeyObject): boolean {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  if (anchor.keyId !== anchorKeyId(publicKey)) return false;
  try {
    return verify(null, Buffer.from(anchorPayload(anchor), 'utf8'), publicKey, Buffer.from(anchor.signature, 'base64'));
  } catch {
    return false;
  }
}

export function generateAnchorKey(): KeyObject {
  return generateKeyPairSync('ed25519').privateKey;
}

/**
 * The signing key from configuration: AUDIT_ANCHOR_PRIVATE_KEY (PKCS#8 PEM; in AWS a Secrets Manager secret the
 * stack injects, locally one generated once by infra/local). Undefined when unset: no anchor is written.
 */
export function configuredAnchorKey(env: NodeJS.ProcessEnv = process.env): KeyObject | undefined {
  const pem = env.AUDIT_ANCHOR_PRIVATE_KEY;
  if (!pem) return undefined;
  const key = createPrivateKey(pem);
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`AUDIT_ANCHOR_PRIVATE_KEY must be an Ed25519 key, not ${key.asymmetricKeyType}`);
  return key;
}

/**
 * The published verification key: AUDIT_ANCHOR_PUBLIC_KEY (SPKI PEM), else the public half of AUDIT_ANCHOR_PRIVATE_KEY.
 * Undefined when neither is set.
 */
export function configuredAnchorPublicKey(env: NodeJS.ProcessEnv = process.env): KeyObject | undefined {
  if (env.AUDIT_ANCHOR_PUBLIC_KEY) return createPublicKey(env.AUDIT_ANCHOR_PUBLIC_KEY);
  const key = configuredAnchorKey(env);
  return key && createPublicKey(key);
}

/** Locally: the key kept in `file` (PKCS#8 PEM), generated there on first use (mode 0600). Returns the PEM. */
export function localAnchorKeyPem(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8');
  mkdirSync(dirname(file), { recursive: true });
  const pem = generateAnchorKey().export({ type: 'pkcs8', format: 'pem' }).toString();
  writeFileSync(file, pem, { mode: 0o600 });
  return pem;
}

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
export function readLatestAnchor(db: Db, orgId: string): Promise<Anchor | undefined> {
  return one<Anchor>(
    db,
    `SELECT ${anchorColumns} FROM audit_anchors WHERE org_id = :orgId::uuid ORDER BY anchored_at DESC, seq DESC LIMIT 1`,
    { orgId },
  );
}

/** The newest anchor of every organization that has one, by organization id. */
export async function readLatestAnchors(db: Db): Promise<Map<string, Anchor>> {
  const { rows } = await db.query<Anchor>(
    `SELECT DISTINCT ON (org_id) ${anchorColumns} FROM audit_anchors ORDER BY org_id, anchored_at DESC, seq DESC`,
  );
  return new Map(rows.map((row) => [row.orgId, row]));
}

export const anchorListQuery = z.object({
  orgId: z.uuid().optional().meta({ description: 'Only the anchors of this organization (one the caller may read)' }),
  ...pageQuery({ defaultLimit: 50, maxLimit: 100 }),
});

const checksum = z.string().meta({ description: 'SHA-256, hex' });
export const auditAnchor = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    seq: z.number().int().meta({ description: 'The chain head anchored' }),
    checksum,
    firstRetainedSeq: z
      .number()
      .int()
      .meta({ description: 'The retention boundary: the first position the chain held' }),
    boundaryChecksum: checksum.nullable().meta({
      description:
        "The checksum the row at firstRetainedSeq links to (the latest retention checkpoint's); null without one",
    }),
    orgCount: z.number().int().meta({ description: 'How many organizations had a chain when the anchor was written' }),
    orgsDigest: checksum.meta({
      description: "SHA-256 (hex) of those organizations' ids, sorted, joined by a newline",
    }),
    anchoredAt: z.string(),
    keyId: z
      .string()
      .meta({ description: 'The first 16 hex digits of the SHA-256 of the signing public key (SPKI DER)' }),
    signature: z.string().meta({
      description: `Ed25519 signature (base64) of the canonical payload: '${anchorVersion}', then per field (orgId, seq, checksum, firstRetainedSeq, boundaryChecksum, orgCount, orgsDigest, anchoredAt, keyId) a newline and '~' for null or '<UTF-8 byte length>:<value>'`,
    }),
  })
  .meta({ id: 'AuditAnchor' });

export const auditAnchorPage = z
  .object({
    publicKey: z
      .string()
      .nullable()
      .meta({ description: 'The Ed25519 public key (SPKI PEM) anchors are signed with; null when none is configured' }),
    keyId: z.string().nullable(),
    data: z.array(auditAnchor),
    pagination: paginationSchema,
  })
  .meta({ id: 'AuditAnchorPage' });

/**
 * GET /audit-logs/anchors: the signed anchors of the organizations the caller may read (audit:read, tenant-scoped as
 * the trail; orgId narrows; soft-deleted organizations included), newest first, with the published public key, so a
 * customer can keep copies and verify the chain against them later.
 */
export async function listAuditAnchors(db: Db, principal: Principal, query: z.infer<typeof anchorListQuery>) {
  requirePermission(principal, 'audit:read');
  const scope = auditScope(principal, { orgId: query.orgId });
  const offset = (query.page - 1) * query.limit;
  const from = `FROM audit_anchors WHERE org_id IN (SELECT o.id FROM organizations o WHERE ${scope.orgs})`;
  const { rows } = await db.query<Anchor>(
    `SELECT ${anchorColumns} ${from} ORDER BY anchored_at DESC, org_id, seq DESC OFFSET :offset::int LIMIT :limit::int`,
    { ...scope.params, offset, limit: query.limit },
  );
  const counted = await one<{ n: number }>(db, `SELECT count(*)::int AS n ${from}`, scope.params);
  const key = configuredAnchorPublicKey();
  return {
    publicKey: key ? publicKeyPem(key) : null,
    keyId: key ? anchorKeyId(key) : null,
    data: rows,
    pagination: pagination(query.page, query.limit, counted!.n),
  };
}
