/**
 * The integrity watch (issue 4), run by the daily retention worker after pruning: for every organization with a chain
 * head, verify its chain since its newest anchor, then append a signed anchor of its head, its retention boundary and
 * the set of organizations with a chain (shared/audit/anchor-signing.ts). A break is logged with its organization, seq and
 * kind, and that organization gets no anchor. Beyond the chain rules it reports what a hash chain alone cannot tell
 * from retention: a prefix deleted by hand (no checkpoint), a whole chain deleted (an anchored organization without a
 * head), and a head rolled back below the newest anchor (tail truncation).
 */
import type { KeyObject } from 'node:crypto';
import { createPublicKey } from 'node:crypto';
import { type Db, one } from '../db/db.ts';
import { logger } from '../logger.ts';
import { type AnchorFields, anchorKeyId, orgsDigest, signAnchor } from './anchor-signing.ts';
import { type Anchor, insertAnchor, readLatestAnchors } from './anchor-store.ts';
import { type ChainLink, readLatestCheckpoint } from './store.ts';
import { type ChainBreakKind, verifyChain } from './verify.ts';

export interface IntegrityFailure {
  orgId: string;
  /** Where the first break is; for a deleted chain, the newest anchored head. */
  seq: number;
  kind: ChainBreakKind;
  /** What the break means: 'chain' (a break of the chain rules), 'prefix deleted', 'chain deleted', 'tail truncation', 'anchor'. */
  reason: string;
}

export interface IntegrityWatchRun {
  /** Organizations with a chain head. */
  organizations: number;
  anchors: Anchor[];
  failures: IntegrityFailure[];
}

/** The organizations with a chain head, in id order, with their heads. */
async function readAllHeads(db: Db): Promise<Map<string, ChainLink>> {
  const { rows } = await db.query<ChainLink & { orgId: string }>(
    'SELECT org_id::text AS "orgId", seq, checksum FROM audit_chain_heads ORDER BY org_id',
  );
  return new Map(rows.map(({ orgId, seq, checksum }) => [orgId, { seq, checksum }]));
}

/**
 * A prefix deleted by hand: retention records every cut as a checkpoint, so the earliest retained row must sit right
 * after the latest checkpoint (or at 1) and link to it (or to nothing).
 */
async function prefixBreak(
  db: Db,
  orgId: string,
  checkpoint: ChainLink | undefined,
): Promise<IntegrityFailure | undefined> {
  const first = await one<{ seq: number; prevChecksum: string | null }>(
    db,
    'SELECT seq, prev_checksum AS "prevChecksum" FROM audit_logs WHERE org_id = :orgId::uuid ORDER BY seq LIMIT 1',
    { orgId },
  );
  if (!first) return undefined;
  const start = (checkpoint?.seq ?? 0) + 1;
  if (first.seq !== start || first.prevChecksum !== (checkpoint?.checksum ?? null)) {
    return {
      orgId,
      seq: Math.min(start, first.seq),
      kind: first.seq > start ? 'missing' : first.seq < start ? 'inserted' : 'link',
      reason: 'prefix deleted',
    };
  }
  return undefined;
}

/** One organization: its first break, or the anchor fields of its verified head. */
async function watchOrganization(
  db: Db,
  orgId: string,
  last: Anchor | undefined,
  publicKey: KeyObject,
  keyId: string,
): Promise<{ failure: IntegrityFailure } | { head: ChainLink; checkpoint: ChainLink | undefined }> {
  const checkpoint = await readLatestCheckpoint(db, orgId);
  const prefix = await prefixBreak(db, orgId, checkpoint);
  if (prefix) return { failure: prefix };
  const verification = await verifyChain(db, orgId, {
    reportHead: true,
    ...(last && {
      since: { seq: last.seq, checksum: last.checksum },
      // An anchor signed with another (earlier) key is checked without its signature.
      anchor: { anchor: last, publicKey: last.keyId === keyId ? publicKey : undefined },
    }),
  });
  const head = verification.head;
  if (!verification.ok || !head) {
    const firstBreak = verification.firstBreak ?? { seq: (head?.seq ?? 0) + 1, kind: 'missing' as const };
    let reason = 'chain';
    if (last && verification.anchor && !verification.anchor.ok) {
      reason = !head || head.seq < last.seq || firstBreak.seq === last.seq ? 'tail truncation' : 'anchor';
    } else if (last && (!head || head.seq < last.seq)) reason = 'tail truncation';
    return { failure: { orgId, seq: firstBreak.seq, kind: firstBreak.kind, reason } };
  }
  return { head, checkpoint: await readLatestCheckpoint(db, orgId) };
}

/**
 * Verifies every chained organization and anchors each intact one, as of `anchoredAt`. `db` is the audit-admin
 * connection (it alone may append anchors); `key` the Ed25519 signing key.
 */
export async function runIntegrityWatch(
  db: Db,
  key: KeyObject,
  options: { anchoredAt?: Date } = {},
): Promise<IntegrityWatchRun> {
  const anchoredAt = (options.anchoredAt ?? new Date()).toISOString();
  const publicKey = createPublicKey(key);
  const keyId = anchorKeyId(publicKey);
  const heads = await readAllHeads(db);
  const anchored = await readLatestAnchors(db);
  const orgIds = [...heads.keys()];
  const digest = orgsDigest(orgIds);
  const run: IntegrityWatchRun = { organizations: orgIds.length, anchors: [], failures: [] };
  const fail = (failure: IntegrityFailure) => {
    run.failures.push(failure);
    logger.error('[integrity-watch] The audit chain of an organization is broken; no anchor written', { ...failure });
  };

  // A head is written with the first row and never removed: an anchored organization without one lost its chain.
  for (const [orgId, last] of anchored) {
    if (!heads.has(orgId)) fail({ orgId, seq: last.seq, kind: 'missing', reason: 'chain deleted' });
  }
  for (const orgId of orgIds) {
    try {
      const watched = await watchOrganization(db, orgId, anchored.get(orgId), publicKey, keyId);
      if ('failure' in watched) {
        fail(watched.failure);
        continue;
      }
      const fields: AnchorFields = {
        orgId,
        seq: watched.head.seq,
        checksum: watched.head.checksum,
        firstRetainedSeq: (watched.checkpoint?.seq ?? 0) + 1,
        boundaryChecksum: watched.checkpoint?.checksum ?? null,
        orgCount: orgIds.length,
        orgsDigest: digest,
        anchoredAt,
        keyId,
      };
      run.anchors.push(await insertAnchor(db, { ...fields, signature: signAnchor(fields, key) }));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      run.failures.push({ orgId, seq: 0, kind: 'missing', reason: `error: ${message}` });
      logger.error('[integrity-watch] Could not verify or anchor an organization', { orgId, error: message });
    }
  }
  return run;
}
