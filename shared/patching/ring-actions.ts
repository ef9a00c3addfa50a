/**
 * What technicians do with a ring: read its status (the gate's numbers), pause and resume it, pass patches through its
 * gate by hand, start an occurrence now; and read the install jobs. Each change is audited in its policy's trail
 * (patch.ring.pause, patch.ring.resume, patch.ring.promote, patch.ring.run).
 */
import type { z } from 'zod';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import { Conflict, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { selectPolicy } from '../policies/store.ts';
import { compileSchedule, nextOccurrence } from '../schedules/engine.ts';
import { selectReachablePatch } from './catalogue.ts';
import { gateOf } from './gate.ts';
import { startOccurrence } from './install.ts';
import { nextRing, type RingOfPolicy, ringById, ringDevices } from './rings.ts';
import type { jobDetail, job as jobSchema } from './schemas.ts';

type JobReply = z.input<typeof jobSchema>;
type JobItem = z.input<typeof jobDetail>['items'][number];

const actorOf = (principal: Principal) => ({
  actorType: principal.actorType,
  id: principal.id,
  email: principal.email,
  name: principal.name,
});

/** A ring whose policy the principal reaches (404 otherwise, another tenant's too), with patching:read. */
async function reachableRing(db: Db, principal: Principal, ringId: string): Promise<RingOfPolicy> {
  requirePermission(principal, 'patching:read');
  const of = await ringById(db, ringId);
  if (!of) throw NotFound('Patch ring');
  if (!(await selectPolicy(db, principal, of.policyId))) throw NotFound('Patch ring');
  return of;
}

/** A ring the principal may act on: patching:manage; organization users only on their organization's own policies. */
async function manageableRing(db: Db, principal: Principal, ringId: string) {
  const of = await reachableRing(db, principal, ringId);
  requirePermission(principal, 'patching:manage');
  if (principal.scope === 'organization' && of.orgId !== principal.orgId)
    throw Forbidden("Organization users act on their organization's own patching policies only");
  return of;
}

const ringResource = (of: RingOfPolicy) => ({
  resourceType: 'patch_ring',
  resourceId: of.ring.id,
  resourceName: (of.ring.name ?? `${of.policyName} ${of.ring.key}`).slice(0, 255),
});

const stateReply = (of: RingOfPolicy, paused: boolean) => ({
  ringId: of.ring.id,
  policyId: of.policyId,
  key: of.ring.key,
  order: of.ring.order,
  paused,
});

export async function setRingPaused(
  db: Db,
  principal: Principal,
  ringId: string,
  paused: boolean,
  audit: AuditContext,
) {
  const of = await manageableRing(db, principal, ringId);
  await db.transaction(async (tx) => {
    const before = await one<{ paused: boolean }>(
      tx,
      'SELECT paused FROM patch_ring_states WHERE ring_id = :ringId::uuid FOR UPDATE',
      { ringId },
    );
    await tx.query(
      `INSERT INTO patch_ring_states (ring_id, policy_id, paused) VALUES (:ringId::uuid, :policyId::uuid, :paused::boolean)
       ON CONFLICT (ring_id) DO UPDATE SET paused = excluded.paused, updated_at = now()`,
      { ringId, policyId: of.policyId, paused },
    );
    if ((before?.paused ?? false) === paused) return;
    await auditOwnedChange(tx, audit, of, {
      action: paused ? 'patch.ring.pause' : 'patch.ring.resume',
      ...ringResource(of),
      details: { policyId: of.policyId, before: { paused: !paused }, after: { paused } },
    });
  });
  return stateReply(of, paused);
}

/** Passes patches through this ring's gate: the next ring may take them; audited as patch.ring.promote. */
export async function promotePatches(
  db: Db,
  principal: Principal,
  ringId: string,
  patchIds: string[],
  audit: AuditContext,
) {
  const of = await manageableRing(db, principal, ringId);
  for (const [index, id] of patchIds.entries()) {
    const patch = await selectReachablePatch(db, principal, id);
    if (!patch || patch.partnerId !== of.partnerId)
      throw ValidationFailed('Not a patch of this partner', [
        { path: `body.patchIds.${index}`, message: 'Not a patch of your catalogue', code: 'custom' },
      ]);
  }
  await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ patchId: string }>(
      `INSERT INTO patch_ring_promotions (ring_id, patch_id, promoted_by)
       SELECT :ringId::uuid, value::uuid, :actor::jsonb FROM jsonb_array_elements_text(:patchIds::jsonb)
       ON CONFLICT (ring_id, patch_id) DO NOTHING RETURNING patch_id AS "patchId"`,
      { ringId, patchIds, actor: actorOf(principal) },
    );
    if (rows.length === 0) return;
    await auditOwnedChange(tx, audit, of, {
      action: 'patch.ring.promote',
      ...ringResource(of),
      details: {
        policyId: of.policyId,
        patchIds: rows.map((r) => r.patchId),
        nextRingId: nextRing(of.rings, of.ring)?.id ?? null,
      },
    });
  });
  return { ringId, promoted: patchIds };
}

/** GET /patch-rings/{ringId}/status: the ring, its devices and, per patch, the gate's numbers. */
export async function ringStatus(db: Db, principal: Principal, ringId: string) {
  const of = await reachableRing(db, principal, ringId);
  const [devices, patches] = await Promise.all([ringDevices(db, of), gateOf(db, of.ring)]);
  const next = of.ring.schedule ? nextOccurrence(compileSchedule(of.ring.schedule), new Date()) : undefined;
  return {
    ...stateReply(of, of.paused),
    nextRingId: nextRing(of.rings, of.ring)?.id ?? null,
    devices: devices.length,
    promotion: of.ring.promotion,
    nextOccurrence: next ? { key: next.key, utc: next.utc } : null,
    patches,
  };
}

/**
 * POST /patch-rings/{ringId}/run-now: an occurrence now, keyed by the request's Idempotency-Key (a repeat answers the
 * same job); 409 while the ring is paused.
 */
export async function runRingNow(
  db: Db,
  principal: Principal,
  ringId: string,
  idempotencyKey: string | undefined,
  audit: AuditContext,
) {
  const of = await manageableRing(db, principal, ringId);
  if (of.paused) throw Conflict('The ring is paused: resume it first');
  const key = `run-now:${idempotencyKey ?? crypto.randomUUID()}`;
  const started = await startOccurrence(
    db,
    of,
    { key, startsAt: new Date(), manual: true, actor: actorOf(principal) },
    audit,
  );
  return { jobId: started.jobId, ringId, occurrenceKey: key, devices: started.devices };
}

const jobColumns = `j.id, j.ring_id AS "ringId", j.policy_id AS "policyId", j.occurrence_key AS "occurrenceKey",
  j.manual, j.starts_at AS "startsAt", j.window_until AS "windowUntil", j.reboot_policy AS "rebootPolicy",
  j.created_at AS "createdAt",
  (SELECT jsonb_build_object('total', count(*), 'pending', count(*) FILTER (WHERE jd.status = 'pending'),
                             'sent', count(*) FILTER (WHERE jd.status = 'sent'),
                             'finished', count(*) FILTER (WHERE jd.status = 'finished'),
                             'suppressed', count(*) FILTER (WHERE jd.status = 'suppressed'))
     FROM patch_job_devices jd WHERE jd.job_id = j.id) AS devices`;

/** Jobs of rings whose policies the principal reaches. */
const reachableJob = `EXISTS (SELECT 1 FROM policies p WHERE p.id = j.policy_id AND p.deleted_at IS NULL
  AND (:scope::text = 'platform' OR (:scope::text = 'partner' AND p.partner_id = :partnerId::uuid)
       OR (:scope::text = 'organization' AND (p.org_id = :orgId::uuid
           OR (p.org_id IS NULL AND p.partner_id = :partnerId::uuid)))))`;
const scopeParams = (principal: Principal) => ({
  scope: principal.scope,
  partnerId: principal.partnerId,
  orgId: principal.orgId,
});

export async function listJobs(db: Db, principal: Principal, query: Page & { ringId?: string }) {
  requirePermission(principal, 'patching:read');
  if (query.ringId) await reachableRing(db, principal, query.ringId);
  return selectPage<JobReply>(
    db,
    jobColumns,
    `patch_jobs j WHERE ${reachableJob} AND (:ringId::uuid IS NULL OR j.ring_id = :ringId::uuid)`,
    'j.created_at DESC, j.id',
    { ...scopeParams(principal), ringId: query.ringId ?? null },
    query,
  );
}

export async function getJob(db: Db, principal: Principal, jobId: string) {
  requirePermission(principal, 'patching:read');
  const { rows } = await db.query<JobReply>(
    `SELECT ${jobColumns} FROM patch_jobs j WHERE j.id = :jobId::uuid AND ${reachableJob}`,
    {
      jobId,
      ...scopeParams(principal),
    },
  );
  const job = rows[0];
  if (!job) throw NotFound('Patch job');
  const { rows: items } = await db.query<JobItem>(
    `SELECT jd.device_id AS "deviceId", d.hostname,
            CASE WHEN jd.status = 'pending' AND j.window_until <= now() THEN 'expired' ELSE jd.status END AS status,
            jd.maintenance_window_id AS "maintenanceWindowId",
            jd.patch_ids AS "patchIds", jd.reboot_policy AS "rebootPolicy", jd.sent_at AS "sentAt",
            jd.finished_at AS "finishedAt",
            coalesce((SELECT jsonb_agg(jsonb_build_object('patchId', r.patch_id, 'outcome', r.outcome,
                                                          'exitCode', r.exit_code, 'message', r.message,
                                                          'at', to_char(r.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                                       ORDER BY r.patch_id)
                        FROM patch_job_results r WHERE r.job_id = jd.job_id AND r.device_id = jd.device_id), '[]') AS results
       FROM patch_job_devices jd JOIN patch_jobs j ON j.id = jd.job_id JOIN devices d ON d.id = jd.device_id
      WHERE jd.job_id = :jobId::uuid
        AND (:scope::text <> 'organization' OR jd.org_id = :orgId::uuid)
      ORDER BY d.hostname, jd.device_id`,
    { jobId, ...scopeParams(principal) },
  );
  return { ...job, items };
}
