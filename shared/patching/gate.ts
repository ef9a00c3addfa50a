/**
 * A ring's promotion gate, per patch: the devices of the ring whose latest result installed it, those that failed,
 * the success rate, and whether they stayed healthy (a device that answered `reboot-required` is healthy once its
 * heartbeat reports a boot (`lastBootAt`) after its install was sent to it, and unhealthy while it has not 30 minutes
 * after its result: a heartbeat alone, without the reboot, does not count); it passes once at least `minDevices` installed it with a success rate of at least
 * `minSuccessPercent`, every one is healthy, and `soakHours` passed since the last install, or once it was promoted
 * by hand.
 */
import type { Db } from '../db/db.ts';
import type { Ring } from './rings.ts';

export interface GateNumbers {
  patchId: string;
  title: string;
  installed: number;
  failed: number;
  successPercent: number | null;
  healthy: number;
  unhealthy: number;
  soakedUntil: Date | null;
  promotedByHand: boolean;
  passed: boolean;
}

/** How long after its result a device asked to reboot has to report a boot since its install before it is unhealthy. */
export const rebootHeartbeatMinutes = 30;

/** The gate's numbers of the ring for every patch it has results or a promotion for (or only `patchIds`). */
export async function gateOf(db: Db, ring: Ring, patchIds?: readonly string[], now = Date.now()) {
  const { rows } = await db.query<{
    patchId: string;
    title: string;
    installed: number;
    failed: number;
    healthy: number;
    unhealthy: number;
    lastInstalledAt: Date | null;
    promoted: boolean;
  }>(
    `WITH latest AS (
       SELECT DISTINCT ON (r.device_id, r.patch_id) r.device_id, r.patch_id, r.outcome, r.at,
              coalesce(jd.sent_at, r.at) AS sent_at
         FROM patch_job_results r JOIN patch_job_devices jd ON jd.job_id = r.job_id AND jd.device_id = r.device_id
        WHERE r.ring_id = :ringId::uuid
          AND (:patchIds::jsonb IS NULL OR r.patch_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:patchIds::jsonb)))
        ORDER BY r.device_id, r.patch_id, r.at DESC),
     numbers AS (
       SELECT l.patch_id,
              count(*) FILTER (WHERE l.outcome <> 'failed')::int AS installed,
              count(*) FILTER (WHERE l.outcome = 'failed')::int AS failed,
              count(*) FILTER (WHERE l.outcome = 'installed'
                                  OR (l.outcome = 'reboot-required' AND d.last_boot_at > l.sent_at))::int AS healthy,
              count(*) FILTER (WHERE l.outcome = 'reboot-required'
                                 AND (d.last_boot_at IS NULL OR d.last_boot_at <= l.sent_at)
                                 AND l.at < to_timestamp(:now::double precision / 1000)
                                            - make_interval(mins => :minutes::int))::int AS unhealthy,
              max(l.at) FILTER (WHERE l.outcome <> 'failed') AS last_installed_at
         FROM latest l JOIN devices d ON d.id = l.device_id
        GROUP BY l.patch_id),
     promoted AS (
       SELECT patch_id FROM patch_ring_promotions WHERE ring_id = :ringId::uuid
          AND (:patchIds::jsonb IS NULL OR patch_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:patchIds::jsonb))))
     SELECT p.id AS "patchId", p.title, coalesce(n.installed, 0) AS installed, coalesce(n.failed, 0) AS failed,
            coalesce(n.healthy, 0) AS healthy, coalesce(n.unhealthy, 0) AS unhealthy,
            n.last_installed_at AS "lastInstalledAt", pr.patch_id IS NOT NULL AS promoted
       FROM (SELECT patch_id FROM numbers UNION SELECT patch_id FROM promoted) ids
       JOIN patches p ON p.id = ids.patch_id
       LEFT JOIN numbers n ON n.patch_id = ids.patch_id
       LEFT JOIN promoted pr ON pr.patch_id = ids.patch_id
      ORDER BY p.title, p.id`,
    { ringId: ring.id, patchIds: patchIds ? [...patchIds] : null, now, minutes: rebootHeartbeatMinutes },
  );
  return rows.map((row): GateNumbers => {
    const judged = row.installed + row.failed;
    const successPercent = judged === 0 ? null : Math.round((row.installed / judged) * 10_000) / 100;
    const lastInstalledAt = row.lastInstalledAt ? new Date(row.lastInstalledAt) : null;
    const soakedUntil = lastInstalledAt
      ? new Date(lastInstalledAt.getTime() + ring.promotion.soakHours * 3600_000)
      : null;
    const computed =
      row.installed >= ring.promotion.minDevices &&
      (successPercent ?? 100) >= ring.promotion.minSuccessPercent &&
      row.healthy === row.installed &&
      (soakedUntil === null || soakedUntil.getTime() <= now);
    return {
      patchId: row.patchId,
      title: row.title,
      installed: row.installed,
      failed: row.failed,
      successPercent,
      healthy: row.healthy,
      unhealthy: row.unhealthy,
      soakedUntil,
      promotedByHand: row.promoted,
      passed: row.promoted || computed,
    };
  });
}

/** The patches among `patchIds` that passed the ring's gate (a ring with minDevices 0 passes patches it never saw). */
export async function passedGate(db: Db, ring: Ring, patchIds: readonly string[], now = Date.now()) {
  if (patchIds.length === 0) return new Set<string>();
  const numbers = await gateOf(db, ring, patchIds, now);
  const passed = new Set(numbers.filter((n) => n.passed).map((n) => n.patchId));
  if (ring.promotion.minDevices === 0) {
    const seen = new Set(numbers.map((n) => n.patchId));
    for (const id of patchIds) if (!seen.has(id)) passed.add(id);
  }
  return passed;
}
