/**
 * Signed anchors of the audit chain (docs/retention.md "Integrity watch, signed anchors and signed retention cuts"): the canonical payload, the
 * Ed25519 signature and the keys from configuration. A bare hash chain proves nothing against whoever can rewrite the
 * database; an anchor signs, with a key the database never holds, an organization's head, its retention boundary and
 * the set of organizations with a chain, and the public key is published (GET /api/v1/audit-logs/anchors).
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
import { anchorVersion, checkpointVersion } from './signed-versions.ts';

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

/** A canonical signed payload: its version, then per value '\n' and '~' (null) or '<UTF-8 bytes>:<value>'. */
function canonicalPayload(version: string, values: readonly (string | number | boolean | null)[]): string {
  let payload = version;
  for (const value of values)
    payload += value === null ? '\n~' : `\n${Buffer.byteLength(String(value), 'utf8')}:${value}`;
  return payload;
}

/** The canonical anchor payload v1: 'logbook-anchor-v1', then its fields in order. */
export function anchorPayload(fields: AnchorFields): string {
  return canonicalPayload(anchorVersion, [
    fields.orgId,
    fields.seq,
    fields.checksum,
    fields.firstRetainedSeq,
    fields.boundaryChecksum,
    fields.orgCount,
    fields.orgsDigest,
    fields.anchoredAt,
    fields.keyId,
  ]);
}

/** What the retention worker signs for each cut: the checkpoint and why the cut was allowed. */
export type CheckpointFields = {
  orgId: string;
  /** The last deleted row: its seq, checksum and canonical timestamp (microseconds, UTC). */
  seq: number;
  checksum: string;
  lastTimestamp: string;
  /** The policy applied, and the instant its window was evaluated at (ISO 8601 with milliseconds, UTC). */
  retentionDays: number;
  asOf: string;
  /** Whether the organization had been anchored at the cut. */
  anchored: boolean;
  keyId: string;
};

export type SignedCheckpoint = CheckpointFields & { signature: string };

/** The canonical checkpoint payload v1: 'logbook-checkpoint-v1', then its fields in order. */
export function checkpointPayload(fields: CheckpointFields): string {
  return canonicalPayload(checkpointVersion, [
    fields.orgId,
    fields.seq,
    fields.checksum,
    fields.lastTimestamp,
    fields.retentionDays,
    fields.asOf,
    fields.anchored,
    fields.keyId,
  ]);
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

const signPayload = (payload: string, privateKey: KeyObject) =>
  sign(null, Buffer.from(payload, 'utf8'), privateKey).toString('base64');

/** Whether `signature` is valid for the payload under this (public or private) key, whose id must be `keyId`. */
function verifyPayload(payload: string, signed: { keyId: string; signature: string }, key: KeyObject): boolean {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  if (signed.keyId !== anchorKeyId(publicKey)) return false;
  try {
    return verify(null, Buffer.from(payload, 'utf8'), publicKey, Buffer.from(signed.signature, 'base64'));
  } catch {
    return false;
  }
}

export const signAnchor = (fields: AnchorFields, privateKey: KeyObject) =>
  signPayload(anchorPayload(fields), privateKey);

/** Whether the anchor's signature is valid for its fields under this (public or private) key. */
export const verifyAnchorSignature = (anchor: AnchorFields & { signature: string }, key: KeyObject) =>
  verifyPayload(anchorPayload(anchor), anchor, key);

export const signCheckpoint = (fields: CheckpointFields, privateKey: KeyObject) =>
  signPayload(checkpointPayload(fields), privateKey);

/** Whether the checkpoint's signature is valid for its fields under this (public or private) key. */
export const verifyCheckpointSignature = (checkpoint: SignedCheckpoint, key: KeyObject) =>
  verifyPayload(checkpointPayload(checkpoint), checkpoint, key);

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
