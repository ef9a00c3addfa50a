/**
 * Compliance of an organization: per device and patch, installed, missing and approved, missing and not approved,
 * failed (with the last error) or pending a reboot; devices not scanned within `staleDays` (from their latest scan's
 * scannedAt; never scanned too) are counted apart and never compliant. A device counts in its worst state (failed,
 * missing-approved, pending reboot, missing-not-approved, installed); its pairs count one by one. The counts of each
 * day are kept (a delayed job armed by the day's first scan) for a 90-day trend.
 */
import type { z } from 'zod';
import { csvFile, type FileDelivery } from '../audit/export.ts';
import { assertPartnerReached } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission } from '../auth/tenancy.ts';
import { type Db, one, prepared } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { armAt } from '../schedules/arm.ts';
import {
  approvalOf,
  type DecisionRow,
  type DevicePatching,
  decisionsFor,
  inParallel,
  patchingOfDevice,
  patchingOfOrganization,
} from './rings.ts';
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
const deviceCountColumns = Object.keys(emptyDevices()) as (keyof DeviceCounts)[];
type DeviceCounts = ReturnType<typeof emptyDevices>;
type PairCounts = ReturnType<typeof emptyPairs>;

/** One scan row of a device (one per source it reports; none when it never reported), with its kept counts. */
type ScanRow = {
  orgId: string;
  id: string;
  hostname: string;
  osUpdaterSuppressed: boolean | null;
  scannedAt: Date | null;
  installed: number | null;
  failed: number | null;
  pendingReboot: number | null;
  /** The ids of the missing patches, comma-separated (a string splits faster than an array parses). */
  missing: string | null;
  lastError: string | null;
};
type DeviceScans = Omit<ScanRow, 'missing'> & { missing: string[] };
const idsOf = (missing: string | null) => (missing ? missing.split(',') : []);
type CataloguePatch = { id: string; severity: string; category: string };

/**
 * What the compliance of one organization, or of every live organization of a partner, is counted from: each live
 * device with the counts kept on its scan rows (a device's sources summed), the partner's catalogue (severity and
 * category, for the approval of missing patches) and its manual decisions. Three statements, whatever the scope.
 */
async function readCompliance(db: Db, scope: { orgId: string } | { partnerId: string }) {
  const partnerId =
    'partnerId' in scope ? ':partnerId::uuid' : '(SELECT partner_id FROM organizations WHERE id = :orgId::uuid)';
  const [{ rows: scans }, { rows: catalogue }, { rows: decisions }] = await Promise.all([
    db.query<ScanRow>(
      prepared(
        'partnerId' in scope ? 'patching_partner_scans' : 'patching_org_scans',
        `SELECT d.org_id AS "orgId", d.id, d.hostname, d.os_updater_suppressed AS "osUpdaterSuppressed",
              s.scanned_at AS "scannedAt", s.installed, s.failed, s.pending_reboot AS "pendingReboot",
              array_to_string(s.missing, ',') AS missing,
              s.last_error AS "lastError"
         FROM devices d LEFT JOIN device_patch_scans s ON s.device_id = d.id
        WHERE d.deleted_at IS NULL
          AND ${
            'partnerId' in scope
              ? `d.org_id IN (SELECT o.id FROM organizations o
                               WHERE o.partner_id = :partnerId::uuid AND o.deleted_at IS NULL)`
              : 'd.org_id = :orgId::uuid'
          }
        ORDER BY d.org_id, d.hostname, d.id`,
      ),
      scope,
    ),
    db.query<CataloguePatch>(
      `SELECT p.id, p.severity, p.category FROM patches p WHERE p.partner_id = ${partnerId}`,
      scope,
    ),
    db.query<DecisionRow>(
      `SELECT d.patch_id AS "patchId", d.org_id AS "orgId", d.ring_id AS "ringId", d.decision, d.until
         FROM patch_decisions d WHERE d.partner_id = ${partnerId}`,
      scope,
    ),
  ]);
  const devices: DeviceScans[] = [];
  for (const row of scans) {
    const last = devices.at(-1);
    if (last?.id !== row.id) {
      devices.push({ ...row, missing: idsOf(row.missing) });
      continue;
    }
    // A second source of the same device: its counts add up, its latest scan is the device's.
    if (row.scannedAt && (!last.scannedAt || new Date(row.scannedAt) > new Date(last.scannedAt)))
      last.scannedAt = row.scannedAt;
    last.installed = (last.installed ?? 0) + (row.installed ?? 0);
    last.failed = (last.failed ?? 0) + (row.failed ?? 0);
    last.pendingReboot = (last.pendingReboot ?? 0) + (row.pendingReboot ?? 0);
    last.missing = [...last.missing, ...idsOf(row.missing)];
    if (row.lastError && (!last.lastError || row.lastError > last.lastError)) last.lastError = row.lastError;
  }
  return {
    devices,
    patches: new Map(catalogue.map((p) => [p.id, p])),
    decisions: decisions.map((r) => ({ ...r, until: r.until ? new Date(r.until) : null })),
  };
}

/** The compliance of one organization now, without its trend (see readCompliance, countCompliance). */
export async function complianceOf(db: Db, orgId: string, staleDays: number, now = Date.now()) {
  const [read, partner] = await Promise.all([
    readCompliance(db, { orgId }),
    one<{ partnerId: string }>(db, 'SELECT partner_id AS "partnerId" FROM organizations WHERE id = :orgId::uuid', {
      orgId,
    }),
  ]);
  const patching = await patchingOfOrganization(db, { orgId, partnerId: partner!.partnerId }, read.devices);
  return countCompliance(orgId, read.devices, patching, read, staleDays, now);
}

/**
 * Counts an organization's devices from their kept counts: a missing patch's approval (the same for every device of
 * one policy's ring) is decided once per ring and patch.
 */
function countCompliance(
  orgId: string,
  devices: readonly DeviceScans[],
  patching: readonly (DevicePatching | undefined)[],
  read: { patches: Map<string, CataloguePatch>; decisions: readonly DecisionRow[] },
  staleDays: number,
  now: number,
) {
  const patches = read.patches;
  const decisions = read.decisions.filter((d) => d.orgId === null || d.orgId === orgId);
  const staleBefore = now - staleDays * 86_400_000;
  const totals = { devices: emptyDevices(), pairs: emptyPairs() };
  const rings = new Map<
    string,
    { ringId: string | null; key: string | null; devices: DeviceCounts; pairs: PairCounts }
  >();
  const approvals = new Map<string, Map<string, boolean>>();
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
      lastError: device.failed ? device.lastError : null,
    };
    if (!scannedAt || scannedAt.getTime() < staleBefore) {
      totals.devices.stale += 1;
      bucket.devices.stale += 1;
      return { ...reply, state: 'stale' as const };
    }
    const counted: PairCounts = {
      ...emptyPairs(),
      installed: device.installed ?? 0,
      failed: device.failed ?? 0,
      pendingReboot: device.pendingReboot ?? 0,
    };
    const policyRing = `${followed?.policyId ?? ''}|${ringKey}`;
    const approved = approvals.get(policyRing) ?? new Map<string, boolean>();
    approvals.set(policyRing, approved);
    for (const patchId of device.missing) {
      let yes = approved.get(patchId);
      if (yes === undefined) {
        const patch = patches.get(patchId);
        yes =
          patch !== undefined &&
          approvalOf(patch, { orgId, ringId: ring?.id ?? null }, decisions, followed?.rules ?? [], now) === 'approved';
        approved.set(patchId, yes);
      }
      if (yes) counted.missingApproved += 1;
      else counted.missingNotApproved += 1;
    }
    for (const state of worstFirst) {
      totals.pairs[countKey[state]] += counted[countKey[state]];
      bucket.pairs[countKey[state]] += counted[countKey[state]];
    }
    const state = worstFirst.find((s) => counted[countKey[s]] > 0) ?? 'installed';
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

/**
 * The compliance of every live organization of a partner: the totals, per ring (a partner-wide policy's ring sums its
 * organizations), per organization, and the summed daily trend; the organizations are read four at a time.
 */
export async function partnerComplianceOf(db: Db, partnerId: string, staleDays: number, now = Date.now()) {
  const [{ rows: orgs }, read] = await Promise.all([
    db.query<{ id: string; name: string }>(
      'SELECT id, name FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY name, id',
      { partnerId },
    ),
    readCompliance(db, { partnerId }),
  ]);
  const devicesOf = new Map<string, DeviceScans[]>(orgs.map((o) => [o.id, []]));
  for (const device of read.devices) devicesOf.get(device.orgId)?.push(device);
  const reports = await inParallel(orgs, 4, async (org) => {
    const devices = devicesOf.get(org.id)!;
    const patching = await patchingOfOrganization(db, { orgId: org.id, partnerId }, devices);
    return countCompliance(org.id, devices, patching, read, staleDays, now);
  });
  const totals = { devices: emptyDevices(), pairs: emptyPairs() };
  const rings = new Map<
    string,
    { ringId: string | null; key: string | null; devices: DeviceCounts; pairs: PairCounts }
  >();
  const add = (into: Record<string, number>, from: Record<string, number>) => {
    for (const [key, n] of Object.entries(from)) into[key] = (into[key] ?? 0) + n;
  };
  for (const report of reports) {
    add(totals.devices, report.devices);
    add(totals.pairs, report.pairs);
    for (const ring of report.rings) {
      const key = ring.ringId ?? '';
      if (!rings.has(key)) rings.set(key, { ...ring, devices: emptyDevices(), pairs: emptyPairs() });
      add(rings.get(key)!.devices, ring.devices);
      add(rings.get(key)!.pairs, ring.pairs);
    }
  }
  return {
    partnerId,
    staleDays,
    devices: totals.devices,
    pairs: totals.pairs,
    osUpdaterNotSuppressed: reports.reduce((sum, r) => sum + r.osUpdaterNotSuppressed, 0),
    rings: [...rings.values()],
    organizations: reports.map((report, index) => ({
      orgId: report.orgId,
      name: orgs[index]!.name,
      devices: report.devices,
      pairs: report.pairs,
      osUpdaterNotSuppressed: report.osUpdaterNotSuppressed,
    })),
  };
}

/** GET /partners/{partnerId}/patch-compliance: the partner's counts, per ring and per organization, with the trend. */
export async function partnerPatchCompliance<R>(
  db: Db,
  principal: Principal,
  partnerId: string,
  query: { staleDays: number; format: 'json' | 'csv'; trendDays: number },
  delivery: FileDelivery<R>,
) {
  await assertPartnerReached(db, principal, partnerId);
  requirePermission(principal, 'patching:read');
  const report = await partnerComplianceOf(db, partnerId, query.staleDays);
  if (query.format === 'csv')
    return delivery.deliver(
      csvFile(
        'partner-patch-compliance',
        ['orgId', 'name', ...deviceCountColumns, 'osUpdaterNotSuppressed'],
        report.organizations.map((o) => [
          o.orgId,
          o.name,
          ...deviceCountColumns.map((c) => String(o.devices[c])),
          String(o.osUpdaterNotSuppressed),
        ]),
      ),
    );
  // A day counts the organizations whose snapshot of it was taken.
  const { rows: trend } = await db.query<{ day: string; devices: DeviceCounts }>(
    `SELECT to_char(c.day, 'YYYY-MM-DD') AS day,
            jsonb_build_object(${deviceCountColumns.map((c) => `'${c}', sum((c.counts ->> '${c}')::int)`).join(', ')}) AS devices
       FROM patch_compliance_days c JOIN organizations o ON o.id = c.org_id AND o.deleted_at IS NULL
      WHERE o.partner_id = :partnerId::uuid AND c.counts <> 'null'::jsonb AND c.day > current_date - :days::int
      GROUP BY c.day ORDER BY c.day`,
    { partnerId, days: query.trendDays },
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

/** The claim of an organization's day (`:orgId`, `:day`): the day's first applied scan inserts the row, once. */
export const claimSnapshotDay = `INSERT INTO patch_compliance_days (org_id, day, counts)
  VALUES (:orgId::uuid, :day::date, 'null'::jsonb) ON CONFLICT DO NOTHING RETURNING 1`;

/**
 * Arms the day's snapshot of an organization, once its day was claimed (by the day's first scan, claimSnapshotDay);
 * the snapshot job then claims and arms the next day's while the organization has scans.
 */
export function armDailySnapshot(orgId: string, now = new Date(), day = now.toISOString().slice(0, 10)) {
  return armAt({ kind: snapshotJobKind, orgId, day }, dayEnd(day), now.getTime());
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
  if (scanned && (await one(db, claimSnapshotDay, { orgId: job.orgId, day: nextDay })))
    await armDailySnapshot(job.orgId, now, nextDay);
}
