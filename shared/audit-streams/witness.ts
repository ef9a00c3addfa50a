/**
 * The outside witness of signed anchors (docs/audit-streaming.md "The outside witness"): each anchor the integrity
 * watch signs is written, once, as a JSON file where the database cannot rewrite it: in AWS an S3 bucket with Object
 * Lock in compliance mode (written by the anchor function only), locally a directory (`.data/witness`). The chain is
 * compared with every witnessed anchor, by the daily watch and by `npm run audit:verify -- --witness`.
 */
import type { KeyObject } from 'node:crypto';
import { z } from 'zod';
import { type AnchorFields, configuredAnchorPublicKey, verifyAnchorSignature } from '../audit/anchor-signing.ts';
import type { AnchorWitness, WitnessBreak } from '../audit/anchor-witness.ts';
import { type ChainLink, selectChainHead, selectLatestCheckpoint } from '../audit/store.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { type Db, one } from '../db/db.ts';
import { ValidationFailed } from '../errors.ts';
import { armDelivery } from './arm.ts';
import { s3WitnessStore } from './s3.ts';
import { directoryWitnessStore, type WitnessStore } from './witness-store.ts';

/** A signed anchor as the witness holds it: every field its signature covers, and the signature. */
export type WitnessedAnchor = AnchorFields & { signature: string };

const witnessedAnchor = z.object({
  orgId: z.uuid(),
  seq: z.number().int(),
  checksum: z.string(),
  firstRetainedSeq: z.number().int(),
  boundaryChecksum: z.string().nullable(),
  orgCount: z.number().int(),
  orgsDigest: z.string(),
  anchoredAt: z.string(),
  keyId: z.string(),
  signature: z.string(),
});

/** A witness at `s3://bucket/prefix` (S3), or in a directory. */
export function witnessStoreAt(location: string): WitnessStore {
  const s3 = /^s3:\/\/([^/]+)\/?(.*)$/.exec(location);
  return s3 ? s3WitnessStore(s3[1]!, s3[2]!) : directoryWitnessStore(location);
}

/** The witness file of an anchor: its organization's folder, then seq and instant, so a listing is in chain order. */
const anchorKey = (anchor: WitnessedAnchor) =>
  `${anchor.orgId}/${String(anchor.seq).padStart(20, '0')}-${anchor.anchoredAt.replace(/[:.]/g, '')}.json`;

export async function publishAnchor(store: WitnessStore, anchor: WitnessedAnchor): Promise<void> {
  const witnessed: WitnessedAnchor = {
    orgId: anchor.orgId,
    seq: anchor.seq,
    checksum: anchor.checksum,
    firstRetainedSeq: anchor.firstRetainedSeq,
    boundaryChecksum: anchor.boundaryChecksum,
    orgCount: anchor.orgCount,
    orgsDigest: anchor.orgsDigest,
    anchoredAt: anchor.anchoredAt,
    keyId: anchor.keyId,
    signature: anchor.signature,
  };
  await store.put(anchorKey(witnessed), `${JSON.stringify(witnessed, null, 2)}\n`);
}

/** The organization's witnessed anchors, in chain order; a file that is not an anchor is an error. */
export async function witnessedAnchors(store: WitnessStore, orgId: string): Promise<WitnessedAnchor[]> {
  const anchors: WitnessedAnchor[] = [];
  for (const key of await store.list(`${orgId}/`)) {
    const parsed = witnessedAnchor.safeParse(JSON.parse(await store.get(key)));
    if (!parsed.success || parsed.data.orgId !== orgId)
      throw new Error(`${store.location}/${key} is not a witnessed anchor of organization ${orgId}`);
    anchors.push(parsed.data);
  }
  return anchors.sort((a, b) => a.seq - b.seq || a.anchoredAt.localeCompare(b.anchoredAt));
}

/** The last row the organization's trail holds, whatever its head claims. */
const selectLastRow = (db: Db, orgId: string) =>
  one<{ seq: number }>(db, 'SELECT max(seq) AS seq FROM audit_logs WHERE org_id = :orgId::uuid', { orgId });

const selectRowAt = (db: Db, orgId: string, seq: number) =>
  one<{ checksum: string }>(db, 'SELECT checksum FROM audit_logs WHERE org_id = :orgId::uuid AND seq = :seq::bigint', {
    orgId,
    seq,
  });

/**
 * What the organization's chain contradicts in its witnessed anchors: a chain that is gone (wiped), a head below the
 * newest witnessed anchor (rolled back), the rows up to it gone while the head still claims them (truncated), or a
 * row at a witnessed position with another checksum (the chain rewritten: its head does not extend the witness).
 * Anchors before the retention boundary are passed: their rows were cut by the signed retention, which the chain's
 * own verification checks. With `publicKey`, every witnessed signature is checked first.
 */
export async function witnessContradiction(
  db: Db,
  orgId: string,
  anchors: WitnessedAnchor[],
  publicKey?: KeyObject,
): Promise<WitnessBreak | undefined> {
  if (anchors.length === 0) return undefined;
  if (publicKey) {
    const forged = anchors.find((anchor) => !verifyAnchorSignature(anchor, publicKey));
    if (forged) return { orgId, seq: forged.seq, kind: 'witness-signature' };
  }
  const newest = anchors.at(-1)!;
  const head: ChainLink | undefined = await selectChainHead(db, orgId);
  const last = (await selectLastRow(db, orgId))?.seq ?? null;
  if (!head && last === null) return { orgId, seq: newest.seq, kind: 'organization-wiped' };
  if (!head || head.seq < newest.seq) return { orgId, seq: newest.seq, kind: 'head-rolled-back' };
  if (last === null || last < newest.seq) return { orgId, seq: newest.seq, kind: 'tail-truncated' };
  const boundary = (await selectLatestCheckpoint(db, orgId))?.seq ?? 0;
  for (const anchor of anchors) {
    if (anchor.seq <= boundary) continue;
    const row = await selectRowAt(db, orgId, anchor.seq);
    if (row && row.checksum !== anchor.checksum) return { orgId, seq: anchor.seq, kind: 'head-not-extending' };
  }
  return undefined;
}

/** The witness the integrity watch publishes to and compares with, and what it does once an anchor is witnessed. */
export function anchorWitnessAt(
  store: WitnessStore,
  options: { publicKey?: KeyObject; witnessed?: (orgId: string) => Promise<void> } = {},
): AnchorWitness {
  return {
    location: store.location,
    async publish(anchor) {
      await publishAnchor(store, anchor);
      await options.witnessed?.(anchor.orgId);
    },
    // Only folders named as organizations are: anything else in the witness is not an anchor.
    organizations: async () => (await store.list('')).filter((name) => z.uuid().safeParse(name).success),
    contradiction: async (db, orgId) =>
      witnessContradiction(db, orgId, await witnessedAnchors(store, orgId), options.publicKey),
  };
}

/** The local default of AUDIT_WITNESS: a directory beside the embedded database. */
export const localWitnessDir = '.data/witness';

/**
 * The witness of configuration: AUDIT_WITNESS (a directory, or s3://bucket/prefix); undefined when unset. Signatures
 * are checked with the published anchor key. With `streams`, each witnessed anchor arms its organization's audit
 * streams, which carry it (where the work queue runs the delivery).
 */
export function configuredWitness(
  options: { streams?: boolean; env?: NodeJS.ProcessEnv } = {},
): AnchorWitness | undefined {
  const env = options.env ?? process.env;
  const location = env.AUDIT_WITNESS;
  if (!location) return undefined;
  return anchorWitnessAt(witnessStoreAt(location), {
    publicKey: configuredAnchorPublicKey(env),
    ...(options.streams && { witnessed: (orgId: string) => armDelivery([orgId]) }),
  });
}

/** The organization's witnessed anchors, newest first, for a caller who may read its trail (audit:read). */
export async function listWitnessed(db: Db, principal: Principal, orgId: string | undefined) {
  const id = orgId ?? principal.orgId;
  if (!id)
    throw ValidationFailed('orgId is required', [{ path: 'query.orgId', message: 'Give orgId', code: 'custom' }]);
  await reachableOrganization(db, principal, id, 'audit:read');
  const location = process.env.AUDIT_WITNESS || null;
  const anchors = location ? (await witnessedAnchors(witnessStoreAt(location), id)).reverse() : [];
  const newest = anchors[0];
  return {
    orgId: id,
    location,
    anchors,
    lastPublishedAt: newest?.anchoredAt ?? null,
    ageSeconds: newest ? Math.max(0, Math.round((Date.now() - Date.parse(newest.anchoredAt)) / 1000)) : null,
  };
}
