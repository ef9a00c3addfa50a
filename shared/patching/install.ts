/**
 * Installs: each occurrence of a ring (its schedule armed as a delayed job through the schedule engine, or started now
 * by hand) is one job per (ring, occurrence). The job holds, per device of the ring, the approved and due patches it
 * is missing and what reboots it may do; devices with a live connection are sent `patch.install` at once, the others
 * at their next connection while the occurrence's window is open (a later occurrence plans them again). The agent
 * answers `patch.result` per patch; a device's last result closes its part of the job, audited as patch.install.
 */

import { auditOwnedChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange, flushAudit } from '../audit/writer.ts';
import { type Db, one } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { postToConnection } from '../live-query/agent-channel.ts';
import { agentOfConnection, connectionAudit } from '../live-query/connections.ts';
import type { PatchInstallMessage } from '../live-query/protocol.ts';
import { logger } from '../logger.ts';
import { suppressingWindows } from '../maintenance/store.ts';
import type { RebootPolicy } from '../policies/patch-vocabulary.ts';
import { enqueue } from '../queue/work-queue.ts';
import { armAt, isDue as isJobDue } from '../schedules/arm.ts';
import { compileSchedule, nextOccurrence } from '../schedules/engine.ts';
import { passedGate } from './gate.ts';
import {
  approvalOf,
  type DecisionRow,
  deadlineOf,
  decisionsFor,
  inParallel,
  isDue,
  previousRing,
  type Ring,
  type RingOfPolicy,
  ringById,
  ringDevices,
  ringsOf,
} from './rings.ts';
import { patchResultMessage } from './schemas.ts';

export const occurrenceJobKind = 'patching.occurrence';
export const deliverJobKind = 'patching.deliver';
export const dispatchJobKind = 'patching.dispatch';
export type OccurrenceJob = { ringId: string; policyId: string; version: number; key: string; at: number };
export type DeliverJob = { deviceId: string; connectionId: string; attempt: number };

/** At most one forced reboot a day per device: a later job that day may not reboot it. */
const forcedRebootGapMs = 86_400_000;
/** Attempts at delivering after a $connect (the connection may not be open yet). */
const connectAttempts = 3;

export const systemAudit = (db: Db): AuditContext => ({ db: unkeyedDb(db), caller: null, pending: [] });

// Arming

function armNextOccurrence(ring: Ring, policy: { policyId: string; version: number }, after: Date, now: Date) {
  if (!ring.schedule) return Promise.resolve();
  const next = nextOccurrence(compileSchedule(ring.schedule), after);
  if (!next) return Promise.resolve();
  const job: OccurrenceJob = {
    ringId: ring.id,
    policyId: policy.policyId,
    version: policy.version,
    key: next.key,
    at: next.at.getTime(),
  };
  return armAt({ kind: occurrenceJobKind, ...job }, next.at, now.getTime());
}

/**
 * Arms the next occurrence of each scheduled ring of a patching policy (after it was created or changed): a job armed
 * for an older version finds the policy moved and does nothing.
 */
export async function armPolicyRings(db: Db, policyId: string, now = new Date()): Promise<void> {
  const policy = await one<{ version: number; items: Ring[] }>(
    db,
    `SELECT version, items FROM policies WHERE id = :policyId::uuid AND kind = 'patching' AND deleted_at IS NULL`,
    { policyId },
  );
  if (!policy) return;
  for (const ring of ringsOf(policy.items as never))
    await armNextOccurrence(ring, { policyId, version: policy.version }, now, now);
}

/**
 * The occurrence job: while the policy is as it was armed for and the occurrence's window is still open, the ring's
 * job for it is made and sent (not while the ring is paused); then the next occurrence is armed.
 */
export async function runOccurrenceJob(db: Db, job: OccurrenceJob, now = new Date()) {
  const of = await ringById(db, job.ringId);
  if (!of || of.policyId !== job.policyId || of.policyVersion !== job.version || !of.ring.schedule) return 'moved';
  if (!isJobDue(job.at, now.getTime())) {
    await armAt({ kind: occurrenceJobKind, ...job }, new Date(job.at), now.getTime());
    return 'not-due';
  }
  let outcome: 'started' | 'paused' | 'missed' = 'missed';
  if (of.paused) outcome = 'paused';
  else if (job.at + of.ring.windowMinutes * 60_000 > now.getTime()) {
    await startOccurrence(db, of, { key: job.key, startsAt: new Date(job.at), manual: false }, systemAudit(db), now);
    outcome = 'started';
  }
  await armNextOccurrence(of.ring, { policyId: of.policyId, version: of.policyVersion }, new Date(job.at + 1), now);
  return outcome;
}

// Planning

type CandidatePatch = {
  patchId: string;
  severity: string;
  category: string;
  releaseDate: Date | null;
  firstSeenAt: Date;
};
type PlannedDevice = {
  deviceId: string;
  orgId: string;
  patchIds: string[];
  rebootPolicy: RebootPolicy;
  deadline: string;
  /** A maintenance window suppressing patching that covers the device now: it is held back this occurrence. */
  maintenanceWindowId: string | null;
};

/**
 * Per device of the ring: the patches its latest scan lists as missing (or failed) that are approved for its
 * organization and the ring, due after the ring's deferral and, past the first ring, through the previous ring's gate.
 */
export async function planInstalls(db: Db, of: RingOfPolicy, now = new Date()): Promise<PlannedDevice[]> {
  const devices = await ringDevices(db, of);
  const decisions = new Map<string, Promise<DecisionRow[]>>();
  const decisionsOf = (orgId: string) => {
    if (!decisions.has(orgId)) decisions.set(orgId, decisionsFor(db, orgId));
    return decisions.get(orgId)!;
  };
  const wanted = await inParallel(devices, 8, async (device) => {
    const { rows } = await db.query<CandidatePatch & { forcedRecently: boolean }>(
      `SELECT p.id AS "patchId", p.severity, p.category, p.release_date AS "releaseDate",
              p.first_seen_at AS "firstSeenAt",
              EXISTS (SELECT 1 FROM patch_job_devices jd WHERE jd.device_id = dp.device_id
                         AND jd.reboot_forced_at > :since::timestamptz) AS "forcedRecently"
         FROM device_patches dp JOIN patches p ON p.id = dp.patch_id
        WHERE dp.device_id = :deviceId::uuid AND dp.state IN ('missing', 'failed')`,
      { deviceId: device.deviceId, since: new Date(now.getTime() - forcedRebootGapMs) },
    );
    const orgDecisions = await decisionsOf(device.orgId);
    const patches = rows.filter(
      (p) =>
        approvalOf(
          { id: p.patchId, severity: p.severity, category: p.category },
          { orgId: device.orgId, ringId: of.ring.id },
          orgDecisions,
          device.rules,
          now.getTime(),
        ) === 'approved' &&
        isDue({ ...p, releaseDate: p.releaseDate && new Date(p.releaseDate) }, of.ring, now.getTime()),
    );
    return { device, patches, forcedRecently: rows[0]?.forcedRecently ?? false };
  });
  const previous = previousRing(of.rings, of.ring);
  const gated = previous
    ? await passedGate(
        db,
        previous,
        [...new Set(wanted.flatMap((w) => w.patches.map((p) => p.patchId)))],
        now.getTime(),
      )
    : undefined;
  const held = await suppressingWindows(
    db,
    wanted.filter((w) => w.patches.length > 0).map((w) => w.device),
    ['patching'],
  );
  return wanted.flatMap(({ device, patches, forcedRecently }) => {
    const admitted = patches.filter((p) => !gated || gated.has(p.patchId));
    if (admitted.length === 0) return [];
    const deadline = new Date(
      Math.min(
        ...admitted.map((p) =>
          deadlineOf({ ...p, releaseDate: p.releaseDate && new Date(p.releaseDate) }, of.ring).getTime(),
        ),
      ),
    );
    return [
      {
        deviceId: device.deviceId,
        orgId: device.orgId,
        patchIds: admitted.map((p) => p.patchId).sort(),
        rebootPolicy: forcedRecently && of.ring.rebootPolicy !== 'never' ? 'never' : of.ring.rebootPolicy,
        deadline: new Date(Math.max(deadline.getTime(), now.getTime())).toISOString(),
        maintenanceWindowId: held.get(device.deviceId) ?? null,
      },
    ];
  });
}

// Jobs

/**
 * The ring's job for one occurrence: made once per (ring, occurrence key), a repeat answers the job made first. The
 * devices with a live connection are sent their installs at once (a job of the work queue).
 */
export async function startOccurrence(
  db: Db,
  of: RingOfPolicy,
  occurrence: { key: string; startsAt: Date; manual: boolean; actor?: Record<string, unknown> },
  audit: AuditContext,
  now = new Date(),
): Promise<{ jobId: string; devices: number; created: boolean }> {
  const existing = await jobOfOccurrence(db, of.ring.id, occurrence.key);
  if (existing) return { ...existing, created: false };
  const plan = await planInstalls(db, of, now);
  const created = await (async () => {
    try {
      return await db.transaction(async (tx) => {
        const job = await one<{ id: string }>(
          tx,
          `INSERT INTO patch_jobs (ring_id, policy_id, partner_id, org_id, occurrence_key, manual, starts_at,
                                   window_until, reboot_policy, reboot_warning_minutes, created_by)
           VALUES (:ringId::uuid, :policyId::uuid, :partnerId::uuid, :orgId::uuid, :key::text, :manual::boolean,
                   :startsAt::timestamptz, :until::timestamptz, :rebootPolicy::text, :warning::int, :actor::jsonb)
           ON CONFLICT (ring_id, occurrence_key) DO NOTHING RETURNING id`,
          {
            ringId: of.ring.id,
            policyId: of.policyId,
            partnerId: of.partnerId,
            orgId: of.orgId,
            key: occurrence.key,
            manual: occurrence.manual,
            startsAt: occurrence.startsAt,
            until: new Date(occurrence.startsAt.getTime() + of.ring.windowMinutes * 60_000),
            rebootPolicy: of.ring.rebootPolicy,
            warning: of.ring.rebootWarningMinutes,
            actor: occurrence.actor ?? null,
          },
        );
        if (!job) return undefined;
        // Sent by the queue worker (which may post to agents' connections) once the job is committed.
        if (plan.some((p) => !p.maintenanceWindowId))
          tx.afterCommit(() => void enqueue({ kind: dispatchJobKind, jobId: job.id }));
        // A device held back by a maintenance window is recorded as suppressed, with the window, and sent nothing.
        if (plan.length > 0)
          await tx.query(
            `INSERT INTO patch_job_devices (job_id, device_id, org_id, patch_ids, reboot_policy, deadline, status,
                                            maintenance_window_id)
             SELECT :jobId::uuid, i."deviceId", i."orgId", ARRAY(SELECT jsonb_array_elements_text(i."patchIds"))::uuid[],
                    i."rebootPolicy", i.deadline,
                    CASE WHEN i."maintenanceWindowId" IS NULL THEN 'pending' ELSE 'suppressed' END, i."maintenanceWindowId"
               FROM jsonb_to_recordset(:plan::jsonb)
                    AS i("deviceId" uuid, "orgId" uuid, "patchIds" jsonb, "rebootPolicy" text, deadline timestamptz,
                         "maintenanceWindowId" uuid)`,
            { jobId: job.id, plan },
          );
        if (occurrence.manual) {
          const event = {
            action: 'patch.ring.run',
            resourceType: 'patch_ring',
            resourceId: of.ring.id,
            resourceName: (of.ring.name ?? `${of.policyName} ${of.ring.key}`).slice(0, 255),
            details: { jobId: job.id, occurrenceKey: occurrence.key, devices: plan.length },
          };
          await auditOwnedChange(tx, audit, of, event);
        }
        return job.id;
      });
    } finally {
      if (audit.caller === null) await flushAudit(audit);
    }
  })();
  if (!created) {
    const again = await jobOfOccurrence(db, of.ring.id, occurrence.key);
    return { ...again!, created: false };
  }
  return { jobId: created, devices: plan.length, created: true };
}

async function jobOfOccurrence(db: Db, ringId: string, key: string) {
  return one<{ jobId: string; devices: number }>(
    db,
    `SELECT j.id AS "jobId", (SELECT count(*)::int FROM patch_job_devices jd WHERE jd.job_id = j.id) AS devices
       FROM patch_jobs j WHERE j.ring_id = :ringId::uuid AND j.occurrence_key = :key::text`,
    { ringId, key },
  );
}

// Delivery

type Claimed = {
  jobId: string;
  deviceId: string;
  connectionId: string;
  rebootPolicy: RebootPolicy;
  warning: number;
  deadline: Date | null;
  patches: PatchInstallMessage['patches'];
};

/**
 * Claims the pending installs (of one job, or of one device) whose device has a live connection and whose window is
 * open, as sent; a forced reboot (`always`) is counted for the day now.
 */
async function claimInstalls(db: Db, by: { jobId?: string; deviceId?: string }) {
  const { rows } = await db.query<Claimed>(
    `WITH claimed AS (
       UPDATE patch_job_devices jd SET status = 'sent', sent_at = now(),
              reboot_forced_at = CASE WHEN jd.reboot_policy = 'always' THEN now() ELSE jd.reboot_forced_at END
         FROM patch_jobs j, agent_connections c
        WHERE j.id = jd.job_id AND c.device_id = jd.device_id AND jd.status = 'pending' AND j.window_until > now()
          AND (:jobId::uuid IS NULL OR jd.job_id = :jobId::uuid)
          AND (:deviceId::uuid IS NULL OR jd.device_id = :deviceId::uuid)
        RETURNING jd.job_id, jd.device_id, jd.patch_ids, jd.reboot_policy, jd.deadline, c.connection_id,
                  j.reboot_warning_minutes)
     SELECT c.job_id AS "jobId", c.device_id AS "deviceId", c.connection_id AS "connectionId",
            c.reboot_policy AS "rebootPolicy", c.reboot_warning_minutes AS warning, c.deadline,
            (SELECT jsonb_agg(jsonb_build_object('patchId', p.id, 'externalId', p.external_id, 'kb', p.kb,
                                                 'title', p.title, 'requiresReboot', p.requires_reboot) ORDER BY p.id)
               FROM patches p WHERE p.id = ANY (c.patch_ids)) AS patches
       FROM claimed c`,
    { jobId: by.jobId ?? null, deviceId: by.deviceId ?? null },
  );
  return rows;
}

async function sendClaimed(db: Db, claimed: Claimed[]): Promise<number> {
  let unsent = 0;
  await inParallel(claimed, 50, async (item) => {
    const message: PatchInstallMessage = {
      type: 'patch.install',
      jobId: item.jobId,
      patchIds: item.patches.map((p) => p.patchId),
      patches: item.patches,
      rebootPolicy: item.rebootPolicy,
      rebootWarningMinutes: item.warning,
      deadline: (item.deadline ? new Date(item.deadline) : new Date()).toISOString(),
    };
    let sent = false;
    try {
      sent = (await postToConnection(item.connectionId, message)) === 'sent';
    } catch (error) {
      logger.warn('Could not send patch.install to its agent', { jobId: item.jobId, error: String(error) });
    }
    if (sent) return;
    unsent += 1;
    await db.query(
      `UPDATE patch_job_devices SET status = 'pending', sent_at = NULL
        WHERE job_id = :jobId::uuid AND device_id = :deviceId::uuid AND status = 'sent'`,
      { jobId: item.jobId, deviceId: item.deviceId },
    );
  });
  return unsent;
}

/** Sends a job's pending installs to the devices that have a live connection; the others wait for their agent. */
export async function dispatchInstalls(db: Db, by: { jobId: string }): Promise<void> {
  await sendClaimed(db, await claimInstalls(db, by));
}

/**
 * At an agent's $connect: installs waiting for its device (read by the statement recording the connection) go out once
 * the connection is open (a queued job).
 */
export const installDelivery = {
  read: `EXISTS (SELECT 1 FROM patch_job_devices jd JOIN patch_jobs j ON j.id = jd.job_id
          WHERE jd.device_id = :deviceId::uuid AND jd.status = 'pending' AND j.window_until > now())`,
  run: async (_db: Db, deviceId: string, connectionId: string, waiting: boolean): Promise<void> => {
    if (waiting) await enqueue({ kind: deliverJobKind, deviceId, connectionId, attempt: 1 }, 0.2);
  },
};

export async function deliverInstalls(db: Db, job: DeliverJob): Promise<void> {
  const unsent = await sendClaimed(db, await claimInstalls(db, { deviceId: job.deviceId }));
  if (unsent > 0 && job.attempt < connectAttempts)
    await enqueue({ kind: deliverJobKind, ...job, attempt: job.attempt + 1 }, job.attempt);
}

// Results

const stateOf = { installed: 'installed', 'reboot-required': 'pending-reboot', failed: 'failed' } as const;

/**
 * `patch.result` from an agent: stored once per (job, device, patch) for a patch the job sent to this device (others
 * are ignored); the device's state of the patch follows it. The device's last result closes its part of the job,
 * audited as patch.install with every patch's outcome.
 */
export async function receivePatchResult(db: Db, connectionId: string, message: Record<string, unknown>) {
  const speaker = await agentOfConnection(db, connectionId);
  const parsed = patchResultMessage.safeParse(message);
  if (!speaker || !parsed.success) {
    logger.info('Ignored a patch.result', { connectionId, valid: parsed.success });
    return;
  }
  const result = parsed.data;
  const deviceId = speaker.agent.deviceId;
  const audit = connectionAudit(db, speaker);
  try {
    await db.transaction(async (tx) => {
      const item = await one<{
        patchIds: string[];
        ringId: string;
        orgId: string;
        rebootPolicy: RebootPolicy;
        status: string;
        hostname: string;
        displayName: string | null;
      }>(
        tx,
        `SELECT jd.patch_ids AS "patchIds", j.ring_id AS "ringId", jd.org_id AS "orgId",
                jd.reboot_policy AS "rebootPolicy", jd.status, d.hostname, d.display_name AS "displayName"
           FROM patch_job_devices jd JOIN patch_jobs j ON j.id = jd.job_id JOIN devices d ON d.id = jd.device_id
          WHERE jd.job_id = :jobId::uuid AND jd.device_id = :deviceId::uuid FOR UPDATE OF jd FOR SHARE OF d`,
        { jobId: result.jobId, deviceId },
      );
      if (!item?.patchIds.includes(result.patchId)) return;
      await tx.query(
        `INSERT INTO patch_job_results AS r (job_id, device_id, patch_id, ring_id, outcome, exit_code, message)
         VALUES (:jobId::uuid, :deviceId::uuid, :patchId::uuid, :ringId::uuid, :outcome::text, :exitCode::int,
                 :message::text)
         ON CONFLICT (job_id, device_id, patch_id) DO UPDATE SET outcome = excluded.outcome,
           exit_code = excluded.exit_code, message = excluded.message, at = now()`,
        {
          ...result,
          deviceId,
          ringId: item.ringId,
          exitCode: result.exitCode ?? null,
          message: result.message ?? null,
        },
      );
      // A patch the device's scans listed as missing, now installed, failed or pending a reboot, leaves the
      // organization's kept count of missing patches (the device's row is held by the lock above, so its deletion or
      // an upload waits; the patch's row is locked before it is read).
      const before = await one<{ state: string; orgId: string; live: boolean }>(
        tx,
        `SELECT dp.state, dp.org_id AS "orgId", d.deleted_at IS NULL AS live
           FROM device_patches dp JOIN devices d ON d.id = dp.device_id
          WHERE dp.device_id = :deviceId::uuid AND dp.patch_id = :patchId::uuid FOR UPDATE OF dp`,
        { deviceId, patchId: result.patchId },
      );
      if (before?.state === 'missing' && before.live)
        await tx.query('SELECT patch_missing_apply(:changes::jsonb)', {
          changes: [{ orgId: before.orgId, patchId: result.patchId, delta: -1 }],
        });
      // The device's state of the patch, and the counts kept on its scan row of the patch's source (read before
      // this statement's change, the patch's row taken with its new state).
      await tx.query(
        `WITH changed AS (
           UPDATE device_patches SET state = :state::text, updated_at = now(),
                  last_error = CASE WHEN :state::text = 'failed' THEN coalesce(:message::text, 'failed') END
            WHERE device_id = :deviceId::uuid AND patch_id = :patchId::uuid
           RETURNING source, state, last_error),
         now_listed AS (
           SELECT dp.patch_id, coalesce(c.state, dp.state) AS state,
                  CASE WHEN c.source IS NULL THEN dp.last_error ELSE c.last_error END AS last_error
             FROM device_patches dp LEFT JOIN changed c ON dp.patch_id = :patchId::uuid
            WHERE dp.device_id = :deviceId::uuid AND dp.source = (SELECT source FROM changed))
         UPDATE device_patch_scans s SET
           installed = (SELECT count(*) FROM now_listed WHERE state = 'installed'),
           failed = (SELECT count(*) FROM now_listed WHERE state = 'failed'),
           pending_reboot = (SELECT count(*) FROM now_listed WHERE state = 'pending-reboot'),
           missing_numbers = coalesce((SELECT array_agg(p.number ORDER BY p.number) FROM now_listed l
                                        JOIN patches p ON p.id = l.patch_id WHERE l.state = 'missing'), '{}'),
           last_error = (SELECT max(last_error) FROM now_listed WHERE state = 'failed')
          WHERE s.device_id = :deviceId::uuid AND s.source = (SELECT source FROM changed)`,
        { state: stateOf[result.outcome], message: result.message ?? null, deviceId, patchId: result.patchId },
      );
      const { rows } = await tx.query<{
        patchId: string;
        outcome: string;
        exitCode: number | null;
        message: string | null;
      }>(
        `SELECT patch_id AS "patchId", outcome, exit_code AS "exitCode", message FROM patch_job_results
          WHERE job_id = :jobId::uuid AND device_id = :deviceId::uuid ORDER BY patch_id`,
        { jobId: result.jobId, deviceId },
      );
      const done = rows.length >= item.patchIds.length && item.status !== 'finished';
      const rebooted = result.outcome === 'reboot-required' && item.rebootPolicy === 'if-required';
      await tx.query(
        `UPDATE patch_job_devices SET
           status = CASE WHEN :done::boolean THEN 'finished' ELSE status END,
           finished_at = CASE WHEN :done::boolean THEN now() ELSE finished_at END,
           reboot_forced_at = CASE WHEN :rebooted::boolean THEN coalesce(reboot_forced_at, now()) ELSE reboot_forced_at END
          WHERE job_id = :jobId::uuid AND device_id = :deviceId::uuid`,
        { done, rebooted, jobId: result.jobId, deviceId },
      );
      if (!done) return;
      const failed = rows.filter((r) => r.outcome === 'failed').length;
      await auditChange(tx, audit, {
        orgId: item.orgId,
        action: 'patch.install',
        resourceType: 'device',
        resourceId: deviceId,
        resourceName: item.displayName ?? item.hostname,
        result: failed === 0 ? 'success' : 'failure',
        details: {
          jobId: result.jobId,
          ringId: item.ringId,
          outcome: failed === 0 ? 'installed' : failed === rows.length ? 'failed' : 'partial',
          results: rows,
        },
      });
    });
  } finally {
    await flushAudit(audit);
  }
}
