/**
 * Compliance of an organization: per device and patch, installed, missing and approved, missing and not approved,
 * failed (with the last error) or pending a reboot; devices not scanned within `staleDays` (from their latest scan's
 * scannedAt; never scanned too) are counted apart and never compliant. A device counts in its worst state (failed,
 * missing-approved, pending reboot, missing-not-approved, installed); its pairs count one by one. The counts of each
 * day are kept (a delayed job armed by the day's first scan) for a 90-day trend.
 */
import type { z } from 'zod';
import { csvFile, type FileDelivery } from '../audit/export.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { armAt } from '../schedules/arm.ts';
import { type Approval, approvalOf, decisionsFor, patchingOfDevice, patchingOfOrganization } from './rings.ts';
import { defaultStaleDays, type devicePatches as devicePatchesSchema } from './schemas.ts';

export const snapshotJobKind = 'patching.snapshot';
export type SnapshotJob = { orgId: string; day: string };

type PairState = 'failed' | 'missing-approved' | 'pending-reboot' | 'missing-not-approved' | 'installed';
/** Worst first. */
const worstFirst: readonly PairState[] = [
  'failed',
  'missing-approved',
  'pending-reboot',
  'missing-not-approved',
  'installed',
];
const countKey = {
  failed: 'failed',
  'missing-approved': 'missingApproved',
  'pending-reboot': 'pendingReboot',
  'missing-not-approved': 'missingNotApproved',
  installed: 'installed',
} as const;

const emptyPairs = () => ({ failed: 0, missingApproved: 0, pendingReboot: 0, missingNotApproved: 0, installed: 0 });
const emptyDevices = () => ({ ...emptyPairs(), stale: 0 });
type DeviceCounts = ReturnType<typeof emptyDevices>;
type PairCounts = ReturnType<typeof emptyPairs>;

function pairState(state: string, approval: Approval): PairState {
  if (state === 'installed') return 'installed';
  if (state === 'failed') return 'failed';
  if (state === 'pending-reboot') return 'pending-reboot';
  return approval === 'approved' ? 'missing-approved' : 'missing-not-approved';
}

type DeviceRow = {
  id: string;
  hostname: string;
  osUpdaterSuppressed: boolean | null;
  scannedAt: Date | null;
};
type PairRow = {
  deviceId: string;
  patchId: string | null;
  state: string;
  lastError: string | null;
  severity: string;
  category: string;
  n: number;
};

/** The compliance of one organization now, without its trend. */
export async function complianceOf(db: Db, orgId: string, staleDays: number, now = Date.now()) {
  const [{ rows: devices }, { rows: pairs }, decisions] = await Promise.all([
    db.query<DeviceRow>(
      `SELECT d.id, d.hostname, d.os_updater_suppressed AS "osUpdaterSuppressed",
              (SELECT max(s.scanned_at) FROM device_patch_scans s WHERE s.device_id = d.id) AS "scannedAt"
         FROM devices d WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL ORDER BY d.hostname, d.id`,
      { orgId },
    ),
    // Pairs of the same device, state, severity and category share their approval unless a manual decision names the
    // patch: those are counted together, the decided ones read one by one.
    db.query<PairRow>(
      `SELECT dp.device_id AS "deviceId", CASE WHEN x.decided THEN dp.patch_id END AS "patchId", dp.state,
              max(dp.last_error) AS "lastError", p.severity, p.category, count(*)::int AS n
         FROM device_patches dp JOIN patches p ON p.id = dp.patch_id
         CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM patch_decisions d WHERE d.patch_id = dp.patch_id
                                               AND (d.org_id IS NULL OR d.org_id = :orgId::uuid)) AS decided) x
        WHERE dp.org_id = :orgId::uuid
        GROUP BY 1, 2, 3, 5, 6`,
      { orgId },
    ),
    decisionsFor(db, orgId),
  ]);
  const pairsOf = new Map<string, PairRow[]>();
  for (const pair of pairs) {
    const list = pairsOf.get(pair.deviceId);
    if (list) list.push(pair);
    else pairsOf.set(pair.deviceId, [pair]);
  }
  const partner = await one<{ partnerId: string }>(
    db,
    'SELECT partner_id AS "partnerId" FROM organizations WHERE id = :orgId::uuid',
    { orgId },
  );
  const patching = await patchingOfOrganization(db, { orgId, partnerId: partner!.partnerId }, devices);
  const staleBefore = now - staleDays * 86_400_000;
  const totals = { devices: emptyDevices(), pairs: emptyPairs() };
  const rings = new Map<
    string,
    { ringId: string | null; key: string | null; devices: DeviceCounts; pairs: PairCounts }
  >();
  let osUpdaterNotSuppressed = 0;
  const deviceStates = devices.map((device, index) => {
    const followed = patching[index];
    const ring = followed?.ring;
    const ringKey = ring?.id ?? '';
    if (!rings.has(ringKey))
      rings.set(ringKey, {
        ringId: ring?.id ?? null,
        key: ring?.key ?? null,
        devices: emptyDevices(),
        pairs: emptyPairs(),
      });
    const bucket = rings.get(ringKey)!;
    if (device.osUpdaterSuppressed === false) osUpdaterNotSuppressed += 1;
    const scannedAt = device.scannedAt ? new Date(device.scannedAt) : null;
    const reply = {
      deviceId: device.id,
      hostname: device.hostname,
      ringId: ring?.id ?? null,
      scannedAt,
      osUpdaterSuppressed: device.osUpdaterSuppressed,
      lastError: null as string | null,
    };
    if (!scannedAt || scannedAt.getTime() < staleBefore) {
      totals.devices.stale += 1;
      bucket.devices.stale += 1;
      return { ...reply, state: 'stale' as const };
    }
    let worst = worstFirst.length - 1;
    for (const pair of pairsOf.get(device.id) ?? []) {
      const approval = approvalOf(
        { id: pair.patchId ?? '', severity: pair.severity, category: pair.category },
        { orgId, ringId: ring?.id ?? null },
        decisions,
        followed?.rules ?? [],
        now,
      );
      const state = pairState(pair.state, approval);
      totals.pairs[countKey[state]] += pair.n;
      bucket.pairs[countKey[state]] += pair.n;
      worst = Math.min(worst, worstFirst.indexOf(state));
      if (pair.state === 'failed' && pair.lastError) reply.lastError = pair.lastError;
    }
    const state = worstFirst[worst]!;
    totals.devices[countKey[state]] += 1;
    bucket.devices[countKey[state]] += 1;
    return { ...reply, state };
  });
  return {
    orgId,
    staleDays,
    devices: totals.devices,
    pairs: totals.pairs,
    osUpdaterNotSuppressed,
    rings: [...rings.values()],
    deviceStates,
  };
}

/** GET /orgs/organizations/{id}/patch-compliance: the counts, per ring, per device, and the daily trend (or CSV). */
export async function patchCompliance<R>(
  db: Db,
  principal: Principal,
  orgId: string,
  query: { staleDays: number; format: 'json' | 'csv'; trendDays: number },
  delivery: FileDelivery<R>,
) {
  await reachableOrganization(db, principal, orgId, 'patching:read');
  const report = await complianceOf(db, orgId, query.staleDays);
  if (query.format === 'csv')
    return delivery.deliver(
      csvFile(
        'patch-compliance',
        ['deviceId', 'hostname', 'ringId', 'state', 'scannedAt', 'osUpdaterSuppressed', 'lastError'],
        report.deviceStates.map((d) => [
          d.deviceId,
          d.hostname,
          d.ringId,
          d.state,
          d.scannedAt?.toISOString() ?? null,
          d.osUpdaterSuppressed === null ? null : String(d.osUpdaterSuppressed),
          d.lastError,
        ]),
      ),
    );
  const { rows: trend } = await db.query<{ day: string; devices: DeviceCounts }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, counts AS devices FROM patch_compliance_days
      WHERE org_id = :orgId::uuid AND counts <> 'null'::jsonb AND day > current_date - :days::int ORDER BY day`,
    { orgId, days: query.trendDays },
  );
  return { ...report, trend };
}

/** GET /devices/{id}/patches: what the device's latest scans list, with each patch's approval for its ring. */
export async function devicePatches(db: Db, principal: Principal, deviceId: string) {
  const device = await getDevice(db, principal, deviceId);
  requirePermission(principal, 'patching:read');
  const followed = await patchingOfDevice(db, device.id);
  if (!followed) throw NotFound('Device');
  const [facts, { rows }, decisions] = await Promise.all([
    one<{ scannedAt: Date | null; rebootPending: boolean | null; osUpdaterSuppressed: boolean | null }>(
      db,
      `SELECT (SELECT max(s.scanned_at) FROM device_patch_scans s WHERE s.device_id = d.id) AS "scannedAt",
              d.reboot_pending AS "rebootPending", d.os_updater_suppressed AS "osUpdaterSuppressed"
         FROM devices d WHERE d.id = :deviceId::uuid`,
      { deviceId: device.id },
    ),
    db.query<Omit<z.input<typeof devicePatchesSchema>['data'][number], 'approval'>>(
      `SELECT p.id AS "patchId", p.external_id AS "externalId", p.kb, p.title, p.severity, p.category, p.source,
              dp.state, dp.last_error AS "lastError"
         FROM device_patches dp JOIN patches p ON p.id = dp.patch_id
        WHERE dp.device_id = :deviceId::uuid ORDER BY p.release_date DESC NULLS LAST, p.title, p.id`,
      { deviceId: device.id },
    ),
    decisionsFor(db, followed.orgId),
  ]);
  return {
    deviceId: device.id,
    scannedAt: facts?.scannedAt ?? null,
    rebootPending: facts?.rebootPending ?? null,
    osUpdaterSuppressed: facts?.osUpdaterSuppressed ?? null,
    policyId: followed.policyId,
    ringId: followed.ring?.id ?? null,
    data: rows.map((row) => ({
      ...row,
      approval: approvalOf(
        { id: row.patchId, severity: row.severity, category: row.category },
        { orgId: followed.orgId, ringId: followed.ring?.id ?? null },
        decisions,
        followed.rules,
      ),
    })),
  };
}

// Daily snapshots

const dayEnd = (day: string) => new Date(`${day}T23:59:00Z`);

/**
 * Arms the day's snapshot of an organization once (the first scan of the day claims the day's row); the snapshot job
 * then arms the next day's while the organization has scans.
 */
export async function armDailySnapshot(
  db: Db,
  orgId: string,
  now = new Date(),
  day = now.toISOString().slice(0, 10),
): Promise<void> {
  const claimed = await one(
    db,
    `INSERT INTO patch_compliance_days (org_id, day, counts) VALUES (:orgId::uuid, :day::date, 'null'::jsonb)
     ON CONFLICT DO NOTHING RETURNING 1`,
    { orgId, day },
  );
  if (claimed) await armAt({ kind: snapshotJobKind, orgId, day }, dayEnd(day), now.getTime());
}

/** The snapshot job: the day's counts kept; days beyond 90 dropped; the next day armed while scans remain. */
export async function takeDailySnapshot(db: Db, job: SnapshotJob, now = new Date()): Promise<void> {
  if (dayEnd(job.day).getTime() > now.getTime() + 1000) {
    await armAt({ kind: snapshotJobKind, ...job }, dayEnd(job.day), now.getTime());
    return;
  }
  const live = await one(db, 'SELECT 1 FROM organizations WHERE id = :orgId::uuid AND deleted_at IS NULL', job);
  if (!live) return;
  const report = await complianceOf(db, job.orgId, defaultStaleDays, now.getTime());
  await db.query(
    `UPDATE patch_compliance_days SET counts = :counts::jsonb WHERE org_id = :orgId::uuid AND day = :day::date`,
    { ...job, counts: report.devices },
  );
  await db.query(`DELETE FROM patch_compliance_days WHERE org_id = :orgId::uuid AND day < :day::date - 90`, job);
  const scanned = await one(db, 'SELECT 1 FROM device_patch_scans WHERE org_id = :orgId::uuid LIMIT 1', job);
  const nextDay = new Date(dayEnd(job.day).getTime() + 86_400_000).toISOString().slice(0, 10);
  if (scanned) await armDailySnapshot(db, job.orgId, now, nextDay);
}
