/**
 * The integrity watch, the last step of the daily retention run: every organization with a chain
 * head or an anchor is verified in full, every retained row, against its signed evidence (shared/audit/evidence.ts:
 * the signed retention checkpoint it starts after, its newest anchor, the record that it was anchored), exactly as
 * GET /audit-logs/verify and `npm run audit:verify` verify it. Only a chain that verifies up to its head gets a new
 * signed anchor of that head; a break is logged with its organization, seq and kind, and counted.
 */
import type { KeyObject } from 'node:crypto';
import { createPublicKey } from 'node:crypto';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { type AnchorFields, anchorKeyId, orgsDigest, signAnchor } from './anchor-signing.ts';
import {
  type Anchor,
  insertAnchor,
  insertAnchorOrgSet,
  selectAnchoredOrgSets,
  selectLatestAnchors,
} from './anchor-store.ts';
import { anchorWitness, type WitnessBreakKind, witnessBreakMeaning } from './anchor-witness.ts';
import { type ChainBreakKind, chainBreakMeaning } from './chain-break.ts';
import {
  anchoredAction,
  type ChainLink,
  selectAnchoredRecord,
  selectHeadlessOrganizations,
  selectLatestCheckpoint,
} from './store.ts';
import { verifyChain } from './verify.ts';
import { writeAuditEvent, zeroUuid } from './writer.ts';

export interface IntegrityFailure {
  orgId: string;
  /** Where the first break is (0 when the organization could not be verified at all). */
  seq: number;
  kind: ChainBreakKind | WitnessBreakKind | 'unverifiable';
  /** What the kind means, in the words every verifier uses (chainBreakMeaning). */
  meaning: string;
}

export interface IntegrityWatchRun {
  /** Organizations verified: those with a chain head or an anchor. */
  organizations: number;
  /** Rows whose checksum was recomputed, over all organizations. */
  rowsVerified: number;
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
 * Before an organization's first anchor, the chain itself records that anchoring began: deleting every
 * anchor later is then reported by every verifier, and once retention cuts this row its signed checkpoint says so.
 */
async function recordFirstAnchor(db: Db, orgId: string, head: ChainLink, keyId: string): Promise<void> {
  await writeAuditEvent(
    { db, pending: [] },
    {
      orgId,
      actorType: 'system',
      actorId: zeroUuid,
      action: anchoredAction,
      resourceType: 'organization',
      resourceId: orgId,
      details: { firstAnchoredSeq: head.seq, firstAnchoredChecksum: head.checksum, keyId },
    },
  );
}

/**
 * Verifies every organization with a chain or an anchor and anchors each intact head, as of `anchoredAt`. `db` is
 * the audit-admin connection (it alone may append anchors); `key` the Ed25519 signing key.
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
  const anchored = await selectLatestAnchors(db);
  const chained = [...heads.keys()];
  const digest = orgsDigest(chained);
  // Every organization an anchored set recorded is verified too: one whose chain and anchors are gone is reported.
  // A recorded set must still match the digest its anchors signed, else it no longer names who was in it.
  const recorded = new Set<string>();
  const setFailures: IntegrityFailure[] = [];
  for (const set of await selectAnchoredOrgSets(db)) {
    for (const orgId of set.orgIds) recorded.add(orgId);
    if (orgsDigest(set.orgIds) !== set.orgsDigest)
      setFailures.push({
        orgId: zeroUuid,
        seq: 0,
        kind: 'organization-missing',
        meaning: `the organization set recorded for digest ${set.orgsDigest} no longer matches it: who was anchored is unknown`,
      });
  }
  // An anchored organization without a head lost its chain: it is verified too, and its anchor reports it. So is one
  // with entries and no head: they were never sealed.
  // So is every organization the outside witness holds anchors of: one wiped with its anchors and sets is still there.
  const witness = anchorWitness();
  const witnessed = witness ? await witness.organizations() : [];
  const orgIds = [
    ...new Set([...chained, ...anchored.keys(), ...recorded, ...witnessed, ...(await selectHeadlessOrganizations(db))]),
  ].sort();
  const run: IntegrityWatchRun = { organizations: orgIds.length, rowsVerified: 0, anchors: [], failures: setFailures };
  for (const failure of setFailures)
    logger.error('[integrity-watch] An anchored organization set was altered', { ...failure });
  // The ids behind this run's digest are recorded before the first anchor that carries it; a run that may not write
  // fails each organization's anchor as it would fail the anchor itself.
  let setRecorded = false;

  for (const orgId of orgIds) {
    try {
      const verification = await verifyChain(db, orgId, { reportHead: true, evidence: { publicKey } });
      run.rowsVerified += verification.checked;
      const head = verification.head;
      if (verification.firstBreak) {
        const { seq, kind } = verification.firstBreak;
        const failure = { orgId, seq, kind, meaning: chainBreakMeaning[kind] };
        run.failures.push(failure);
        logger.error('[integrity-watch] The audit chain of an organization is broken; no anchor written', failure);
        continue;
      }
      const contradiction = await witness?.contradiction(db, orgId);
      if (contradiction) {
        const failure = { ...contradiction, meaning: witnessBreakMeaning[contradiction.kind] };
        run.failures.push(failure);
        logger.error('[integrity-watch] The audit chain contradicts its witnessed anchors; no anchor written', failure);
        continue;
      }
      if (!head) continue;
      const checkpoint = await selectLatestCheckpoint(db, orgId);
      const fields: AnchorFields = {
        orgId,
        seq: head.seq,
        checksum: head.checksum,
        firstRetainedSeq: (checkpoint?.seq ?? 0) + 1,
        boundaryChecksum: checkpoint?.checksum ?? null,
        orgCount: chained.length,
        orgsDigest: digest,
        anchoredAt,
        keyId,
      };
      if (!setRecorded) {
        await insertAnchorOrgSet(db, digest, chained);
        setRecorded = true;
      }
      const first = !anchored.has(orgId) && (await selectAnchoredRecord(db, orgId)) === undefined;
      // One transaction: a record of a first anchor that was never written would read as anchors deleted.
      const anchor = await db.transaction(async (tx) => {
        if (first) await recordFirstAnchor(tx, orgId, head, keyId);
        return insertAnchor(tx, { ...fields, signature: signAnchor(fields, key) });
      });
      run.anchors.push(anchor);
      // Published outside the database, where no one who can rewrite the database can take it back.
      await witness?.publish(anchor).catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        run.failures.push({
          orgId,
          seq: anchor.seq,
          kind: 'unverifiable',
          meaning: `the anchor could not be published to the witness at ${witness.location}: ${message}`,
        });
        logger.error('[integrity-watch] An anchor could not be published to the witness', { orgId, error: message });
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      run.failures.push({ orgId, seq: 0, kind: 'unverifiable', meaning: `could not be verified: ${message}` });
      logger.error('[integrity-watch] Could not verify or anchor an organization', { orgId, error: message });
    }
  }
  return run;
}
