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
import { pagination } from '../db/paging.ts';
import { NotFound } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { armAt } from '../schedules/arm.ts';
import {
  approvalOf,
  decisionsFor,
  type OrganizationPatching,
  patchingOfDevice,
  patchingPlanOf,
  patchingPlansOf,
} from './rings.ts';
import { defaultStaleDays, type devicePatches as devicePatchesSchema, deviceStatesMaxLimit } from './schemas.ts';

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

/**
 * The compliance in one statement, per organization, ring and state (`grouped`: an organization's or a partner's
 * counts) or per device (one page of an organization's devices by hostname, after a keyset or an offset): each
 * device's scan rows give its installed, failed and pending-reboot counts and its missing patches; the approval of a
 * missing patch is decided once per group (organization, policy and ring; see planParams) and patch (the most specific
 * manual decision, else the policy's rules) for the patches the kept counts name for the organization
 * (patch_missing_counts: a row per patch some live device of the organization misses), and each device's approved
 * count is the size of the intersection of its scan rows' missing patch numbers with its group's approved numbers
 * (one intarray call per scan row, no row per missing patch); a device counts in its worst state, or stale when its
 * latest scan is older than `staleBefore` (its pairs then not counted).
 */
const complianceSql = (grouped: boolean) => `
  WITH plan AS (
    SELECT * FROM jsonb_to_recordset(:orgs::jsonb) AS p("orgId" uuid, grp int)),
  chosen AS (
    SELECT * FROM jsonb_to_recordset(:devices::jsonb) AS c("deviceId" uuid, grp int)),
  grps AS (
    SELECT * FROM jsonb_to_recordset(:groups::jsonb)
      AS g(grp int, "orgId" uuid, "policyId" uuid, "ringId" uuid, rules jsonb)),
  dev AS MATERIALIZED (
    SELECT d.id, d.org_id, d.hostname, d.os_updater_suppressed, coalesce(c.grp, p.grp) AS grp
      FROM devices d JOIN plan p ON p."orgId" = d.org_id LEFT JOIN chosen c ON c."deviceId" = d.id
     WHERE d.deleted_at IS NULL${
       grouped
         ? ''
         : `
       AND (:afterId::uuid IS NULL OR (d.hostname, d.id) > (:afterHostname::text, :afterId::uuid))
     ORDER BY d.hostname, d.id OFFSET :offset::int LIMIT :limit::int`
     }),
  -- The (group, patch) pairs whose approval is decided: the patches the kept counts say some live device of the
  -- group's organization is missing (a pair no device of the group misses is decided too, and never looked up).
  approvals AS MATERIALIZED (
    SELECT g.grp, p.number
      FROM grps g JOIN patch_missing_counts c ON c.org_id = g."orgId" JOIN patches p ON p.id = c.patch_id
     WHERE coalesce(
             (SELECT d.decision = 'approved' FROM patch_decisions d
               WHERE d.patch_id = c.patch_id AND (d.org_id IS NULL OR d.org_id = g."orgId")
                 AND (d.ring_id IS NULL OR d.ring_id = g."ringId")
                 AND NOT (d.decision = 'deferred' AND d.until IS NOT NULL AND d.until <= :now::timestamptz)
               ORDER BY d.org_id IS NOT NULL DESC, d.ring_id IS NOT NULL DESC LIMIT 1),
             EXISTS (SELECT 1 FROM jsonb_array_elements(g.rules) AS rule
                      WHERE (jsonb_typeof(rule -> 'severities') IS DISTINCT FROM 'array'
                             OR rule -> 'severities' ? p.severity)
                        AND (jsonb_typeof(rule -> 'categories') IS DISTINCT FROM 'array'
                             OR rule -> 'categories' ? p.category)))),
  -- Each group's approved patches as one sorted array of the patches' numbers.
  approved AS MATERIALIZED (
    SELECT grp, array_agg(number ORDER BY number) AS numbers FROM approvals GROUP BY grp),
  -- Each device's approved missing patches: its scan rows' missing numbers intersected with its group's approved.
  -- (The arrays are counted per scan row before the rows are grouped, and the counts leave the last error out, so
  -- the grouping carries only numbers.)
  scans AS MATERIALIZED (
    SELECT device_id, max(scanned_at) AS scanned_at, sum(installed)::int AS installed, sum(failed)::int AS failed,
           sum(pending_reboot)::int AS pending_reboot, max(last_error) AS last_error, sum(missing)::int AS missing,
           sum(approved)::int AS approved
      FROM (SELECT s.device_id, s.scanned_at, s.installed, s.failed, s.pending_reboot,
                   ${grouped ? 'NULL::text' : 's.last_error'} AS last_error,
                   cardinality(s.missing_numbers) AS missing,
                   coalesce(icount(s.missing_numbers & a.numbers), 0) AS approved
              FROM device_patch_scans s JOIN dev v ON v.id = s.device_id LEFT JOIN approved a ON a.grp = v.grp
             WHERE s.org_id IN (SELECT "orgId" FROM plan)) AS s
     GROUP BY device_id),
  states AS (
    SELECT v.id, v.org_id, v.hostname, v.os_updater_suppressed, g."ringId" AS ring_id, c.scanned_at,
           CASE WHEN c.failed > 0 THEN c.last_error END AS last_error,
           coalesce(c.installed, 0) AS installed, coalesce(c.failed, 0) AS failed,
           coalesce(c.pending_reboot, 0) AS pending_reboot, coalesce(c.approved, 0) AS missing_approved,
           coalesce(c.missing - c.approved, 0) AS missing_not_approved,
           CASE WHEN c.scanned_at IS NULL OR c.scanned_at < :staleBefore::timestamptz THEN 'stale'
                WHEN c.failed > 0 THEN 'failed'
                WHEN c.approved > 0 THEN 'missing-approved'
                WHEN c.pending_reboot > 0 THEN 'pending-reboot'
                WHEN c.missing > c.approved THEN 'missing-not-approved'
                ELSE 'installed' END AS state
      FROM dev v JOIN grps g ON g.grp = v.grp
      LEFT JOIN scans c ON c.device_id = v.id)
  ${
    grouped
      ? `SELECT org_id AS "orgId", ring_id AS "ringId", state, count(*)::int AS devices,
                sum(installed) FILTER (WHERE state <> 'stale')::int AS installed,
                sum(failed) FILTER (WHERE state <> 'stale')::int AS failed,
                sum(pending_reboot) FILTER (WHERE state <> 'stale')::int AS "pendingReboot",
                sum(missing_approved) FILTER (WHERE state <> 'stale')::int AS "missingApproved",
                sum(missing_not_approved) FILTER (WHERE state <> 'stale')::int AS "missingNotApproved",
                count(*) FILTER (WHERE os_updater_suppressed = false)::int AS "osUpdaterNotSuppressed"
           FROM states GROUP BY org_id, ring_id, state`
      : `SELECT id AS "deviceId", hostname, ring_id AS "ringId", state, scanned_at AS "scannedAt",
                os_updater_suppressed AS "osUpdaterSuppressed", last_error AS "lastError", installed, failed,
                pending_reboot AS "pendingReboot", missing_approved AS "missingApproved",
                missing_not_approved AS "missingNotApproved"
           FROM states ORDER BY hostname, id`
  }`;
const orgComplianceSql = prepared('patching_org_compliance', complianceSql(false));
const partnerComplianceSql = prepared('patching_partner_compliance', complianceSql(true));

type State = PairState | 'stale';
/** A count of the statement: one device (an organization's report) or the devices of an organization, ring and state. */
type CountRow = PairCounts & {
  ringId: string | null;
  state: State;
  devices?: number;
  osUpdaterNotSuppressed?: number;
};

/**
 * The statement's parameters for these organizations' patching (see patchingPlanOf): each distinct (organization,
 * policy, ring) is a group numbered here, with the policy's rules; each organization names its devices' group, and
 * the devices that differ name theirs.
 */
function planParams(plans: readonly OrganizationPatching[], staleDays: number, now: number) {
  const groups = new Map<
    string,
    { grp: number; orgId: string; policyId: string | null; ringId: string | null; rules: unknown }
  >();
  const grpOf = (orgId: string, p: { policyId: string | null; ring: { id: string } | undefined; rules: unknown }) => {
    const key = `${orgId}|${p.policyId ?? ''}|${p.ring?.id ?? ''}`;
    if (!groups.has(key))
      groups.set(key, { grp: groups.size, orgId, policyId: p.policyId, ringId: p.ring?.id ?? null, rules: p.rules });
    return groups.get(key)!.grp;
  };
  const orgs = plans.map((p) => ({ orgId: p.orgId, grp: grpOf(p.orgId, p) }));
  const devices = plans.flatMap((p) => p.devices.map((d) => ({ deviceId: d.deviceId, grp: grpOf(p.orgId, d) })));
  return {
    orgs,
    devices,
    groups: [...groups.values()],
    staleBefore: new Date(now - staleDays * 86_400_000).toISOString(),
    now: new Date(now).toISOString(),
  };
}

/** The ring keys the plans name, by ring id. */
const ringKeysOf = (plans: readonly OrganizationPatching[]) =>
  new Map(
    plans
      .flatMap((p) => [p.ring, ...p.devices.map((d) => d.ring)])
      .filter((r): r is NonNullable<typeof r> => r !== undefined)
      .map((r) => [r.id, r.key]),
  );

/** Totals and per-ring counts of count rows (each one device unless it says how many). */
function summed(rows: readonly CountRow[], keys: Map<string, string>) {
  const totals = { devices: emptyDevices(), pairs: emptyPairs(), osUpdaterNotSuppressed: 0 };
  const rings = new Map<
    string,
    { ringId: string | null; key: string | null; devices: DeviceCounts; pairs: PairCounts }
  >();
  for (const row of rows) {
    const ringKey = row.ringId ?? '';
    if (!rings.has(ringKey))
      rings.set(ringKey, {
        ringId: row.ringId,
        key: row.ringId ? (keys.get(row.ringId) ?? null) : null,
        devices: emptyDevices(),
        pairs: emptyPairs(),
      });
    const bucket = rings.get(ringKey)!;
    const n = row.devices ?? 1;
    const stateKey = row.state === 'stale' ? 'stale' : countKey[row.state];
    totals.devices[stateKey] += n;
    bucket.devices[stateKey] += n;
    totals.osUpdaterNotSuppressed += row.osUpdaterNotSuppressed ?? 0;
    if (row.state === 'stale') continue;
    for (const state of worstFirst) {
      totals.pairs[countKey[state]] += row[countKey[state]] ?? 0;
      bucket.pairs[countKey[state]] += row[countKey[state]] ?? 0;
    }
  }
  return { ...totals, rings: [...rings.values()] };
}

type DeviceStateRow = CountRow & {
  deviceId: string;
  hostname: string;
  scannedAt: Date | null;
  osUpdaterSuppressed: boolean | null;
  lastError: string | null;
};
const deviceStateOf = (r: DeviceStateRow) => ({
  deviceId: r.deviceId,
  hostname: r.hostname,
  ringId: r.ringId,
  scannedAt: r.scannedAt ? new Date(r.scannedAt) : null,
  osUpdaterSuppressed: r.osUpdaterSuppressed,
  lastError: r.lastError,
  state: r.state,
});

/** An organization's patching plan, with the partner it belongs to. */
async function organizationPlan(db: Db, orgId: string) {
  const partner = await one<{ partnerId: string }>(
    db,
    'SELECT partner_id AS "partnerId" FROM organizations WHERE id = :orgId::uuid',
    { orgId },
  );
  return patchingPlanOf(db, { orgId, partnerId: partner!.partnerId });
}

/** One page of an organization's device rows (by hostname, then id): after a device (keyset), or an offset. */
function deviceStatesPage(
  db: Db,
  plan: OrganizationPatching,
  staleDays: number,
  now: number,
  page: { offset: number; limit: number; after?: { hostname: string; deviceId: string } },
) {
  return db.query<DeviceStateRow>(orgComplianceSql, {
    ...planParams([plan], staleDays, now),
    offset: page.offset,
    limit: page.limit,
    afterHostname: page.after?.hostname ?? null,
    afterId: page.after?.deviceId ?? null,
  });
}

/**
 * The compliance of one organization now, without its trend: its patching resolved, then its counts in one statement
 * and one page of its device rows (`page`, `limit`) in another, which reads only that page's devices.
 */
export async function complianceOf(
  db: Db,
  orgId: string,
  staleDays: number,
  now = Date.now(),
  devicePage = { page: 1, limit: deviceStatesMaxLimit },
) {
  const plan = await organizationPlan(db, orgId);
  const [{ rows: counts }, { rows }] = await Promise.all([
    db.query<CountRow & { orgId: string; devices: number; osUpdaterNotSuppressed: number }>(
      partnerComplianceSql,
      planParams([plan], staleDays, now),
    ),
    deviceStatesPage(db, plan, staleDays, now, {
      offset: (devicePage.page - 1) * devicePage.limit,
      limit: devicePage.limit,
    }),
  ]);
  const counted = summed(counts, ringKeysOf([plan]));
  const total = deviceCountColumns.reduce((n, c) => n + counted.devices[c], 0);
  return {
    orgId,
    staleDays,
    devices: counted.devices,
    pairs: counted.pairs,
    osUpdaterNotSuppressed: counted.osUpdaterNotSuppressed,
    rings: counted.rings,
    deviceStates: rows.map(deviceStateOf),
    pagination: pagination(devicePage.page, devicePage.limit, total),
  };
}

/** Every device row of an organization, read page by page (each reply of the database under the Data API's 1 MiB). */
async function allDeviceStates(db: Db, orgId: string, staleDays: number, now = Date.now()) {
  const plan = await organizationPlan(db, orgId);
  const all: ReturnType<typeof deviceStateOf>[] = [];
  for (;;) {
    const last = all.at(-1);
    const { rows } = await deviceStatesPage(db, plan, staleDays, now, {
      offset: 0,
      limit: deviceStatesMaxLimit,
      ...(last && { after: { hostname: last.hostname, deviceId: last.deviceId } }),
    });
    all.push(...rows.map(deviceStateOf));
    if (rows.length < deviceStatesMaxLimit) return all;
  }
}

/**
 * GET /orgs/organizations/{id}/patch-compliance: the counts, per ring, one page of the devices, and the daily trend;
 * or every device as CSV.
 */
export async function patchCompliance<R>(
  db: Db,
  principal: Principal,
  orgId: string,
  query: { staleDays: number; format: 'json' | 'csv'; trendDays: number; page: number; limit: number },
  delivery: FileDelivery<R>,
) {
  await reachableOrganization(db, principal, orgId, 'patching:read');
  if (query.format === 'csv') {
    const deviceStates = await allDeviceStates(db, orgId, query.staleDays);
    return delivery.deliver(
      csvFile(
        'patch-compliance',
        ['deviceId', 'hostname', 'ringId', 'state', 'scannedAt', 'osUpdaterSuppressed', 'lastError'],
        deviceStates.map((d) => [
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
  }
  const report = await complianceOf(db, orgId, query.staleDays, Date.now(), query);
  const { rows: trend } = await db.query<{ day: string; devices: DeviceCounts }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, counts AS devices FROM patch_compliance_days
      WHERE org_id = :orgId::uuid AND counts <> 'null'::jsonb AND day > current_date - :days::int ORDER BY day`,
    { orgId, days: query.trendDays },
  );
  return { ...report, trend };
}

/**
 * The compliance of every live organization of a partner: the totals, per ring (a partner-wide policy's ring sums its
 * organizations) and per organization; the organizations' patching is resolved together (patchingPlansOf), then one statement
 * counts every device in the database.
 */
export async function partnerComplianceOf(db: Db, partnerId: string, staleDays: number, now = Date.now()) {
  const { rows: orgs } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY name, id',
    { partnerId },
  );
  const plans = await patchingPlansOf(
    db,
    orgs.map((org) => org.id),
  );
  const { rows } = await db.query<CountRow & { orgId: string; devices: number; osUpdaterNotSuppressed: number }>(
    partnerComplianceSql,
    planParams(plans, staleDays, now),
  );
  const keys = ringKeysOf(plans);
  const counted = summed(rows, keys);
  const byOrg = new Map<string, CountRow[]>(orgs.map((o) => [o.id, []]));
  for (const row of rows) byOrg.get(row.orgId)?.push(row);
  return {
    partnerId,
    staleDays,
    devices: counted.devices,
    pairs: counted.pairs,
    osUpdaterNotSuppressed: counted.osUpdaterNotSuppressed,
    rings: counted.rings,
    organizations: orgs.map((org) => {
      const own = summed(byOrg.get(org.id)!, keys);
      return {
        orgId: org.id,
        name: org.name,
        devices: own.devices,
        pairs: own.pairs,
        osUpdaterNotSuppressed: own.osUpdaterNotSuppressed,
      };
    }),
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
  const report = await complianceOf(db, job.orgId, defaultStaleDays, now.getTime(), { page: 1, limit: 1 });
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
