/**
 * The integrity watch, the last step of the daily retention run: every organization with a chain
 * head or an anchor is verified against its signed evidence (shared/audit/evidence.ts: the signed retention
 * checkpoint it starts after, its newest anchor, the record that it was anchored), exactly as GET /audit-logs/verify
 * and `npm run audit:verify` verify it: every retained row while the whole trail fits one run, else the rows written
 * since each organization's newest anchor and the day's stripes of the older ones (shared/audit/watch-plan.ts), the
 * stripes the run has no time for verified by jobs of the work queue. Only a chain that verifies up to its head gets
 * a new signed anchor of that head; a break is logged with its organization, seq and kind, and counted.
 */
import type { KeyObject } from 'node:crypto';
import { createPublicKey } from 'node:crypto';
import type { Db } from '../db/db.ts';
import { logger } from '../logger.ts';
import { enqueue } from '../queue/work-queue.ts';
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
  selectLatestCheckpoints,
} from './store.ts';
import { verifyChain } from './verify.ts';
import {
  type ChainPlan,
  defaultWatchSettings,
  planIntegrityWatch,
  type StripeJob,
  type WatchSettings,
} from './watch-plan.ts';
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
  /** Whether every retained row was verified (else: new rows and the day's stripes, docs/audit.md). */
  full: boolean;
  /** Jobs of older rows handed to the work queue (none while the run has time for them). */
  queued: number;
}

/**
 * The job of older rows: run by the retention worker from its queue in AWS (functions/retention/run.ts), by the local
 * job runner here (functions/queue/jobs.ts), both with verifyStripeJob.
 */
export const stripeJobKind = 'audit.verify-stripes';

/** The watch's settings from the environment (docs/audit.md), over the defaults. */
export function configuredWatchSettings(env: NodeJS.ProcessEnv = process.env): WatchSettings {
  const positive = (name: string, fallback: number) => {
    const value = Number(env[name]);
    return env[name] !== undefined && Number.isInteger(value) && value > 0 ? value : fallback;
  };
  return {
    ...defaultWatchSettings,
    reverifyDays: positive('AUDIT_REVERIFY_DAYS', defaultWatchSettings.reverifyDays),
    rowsPerSecond: positive('AUDIT_VERIFY_ROWS_PER_SECOND', defaultWatchSettings.rowsPerSecond),
  };
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
  options: {
    /** The run's time: what its anchors say, and what picks the day's stripes. */
    anchoredAt?: Date;
    settings?: Partial<WatchSettings>;
    /** False in the anchor runs between daily runs: the new rows only, the day's stripes left to the daily run. */
    stripes?: boolean;
    /** Where jobs of older rows go (default: the work queue). */
    queueStripes?: (job: StripeJob) => Promise<void>;
  } = {},
): Promise<IntegrityWatchRun> {
  const runAt = options.anchoredAt ?? new Date();
  const anchoredAt = runAt.toISOString();
  const settings = { ...configuredWatchSettings(), ...options.settings };
  // In AWS the retention worker's own queue (INTEGRITY_QUEUE_URL): its jobs need the audit-admin login it alone holds.
  const queueStripes =
    options.queueStripes ?? ((job: StripeJob) => enqueue({ kind: stripeJobKind, ...job }, 0, 'INTEGRITY_QUEUE_URL'));
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
  const checkpoints = await selectLatestCheckpoints(db, orgIds);
  const plan = planIntegrityWatch(
    orgIds.map((orgId) => ({
      orgId,
      start: (checkpoints[orgId]?.seq ?? 0) + 1,
      head: heads.get(orgId)?.seq ?? 0,
      anchored: anchored.get(orgId)?.seq ?? null,
    })),
    runAt,
    settings,
    { stripes: options.stripes },
  );
  const planned = new Map<string, ChainPlan>(plan.chains.map((chain) => [chain.orgId, chain]));
  const run: IntegrityWatchRun = {
    organizations: orgIds.length,
    rowsVerified: 0,
    anchors: [],
    failures: setFailures,
    full: plan.full,
    queued: 0,
  };
  if (!plan.full)
    logger.info("[integrity-watch] Incremental: new rows and the day's stripes", {
      retainedRows: plan.retainedRows,
      runRows: plan.runRows,
      jobs: plan.jobs.length,
    });
  for (const failure of setFailures)
    logger.error('[integrity-watch] An anchored organization set was altered', { ...failure });
  // The ids behind this run's digest are recorded before the first anchor that carries it; a run that may not write
  // fails each organization's anchor as it would fail the anchor itself.
  let setRecorded = false;

  for (const orgId of orgIds) {
    try {
      const chainPlan = planned.get(orgId);
      const verification = await verifyChain(db, orgId, {
        reportHead: true,
        evidence: { publicKey },
        ...(chainPlan && !chainPlan.full && { seqRanges: chainPlan.ranges }),
      });
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
  for (const job of plan.jobs) {
    await queueStripes(job);
    run.queued += 1;
  }
  return run;
}

/**
 * A job of older rows (the stripes the daily run had no time for): verified in one snapshot, a break logged as the
 * watch logs it and returned. Writes nothing: the anchors are the daily run's.
 */
export async function verifyStripeJob(db: Db, job: StripeJob): Promise<IntegrityFailure | undefined> {
  const verification = await verifyChain(db, job.orgId, { seqRanges: job.ranges });
  if (!verification.firstBreak) return undefined;
  const { seq, kind } = verification.firstBreak;
  const failure = { orgId: job.orgId, seq, kind, meaning: chainBreakMeaning[kind] };
  logger.error('[integrity-watch] The audit chain of an organization is broken (older rows)', failure);
  return failure;
}
