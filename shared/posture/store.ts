import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { selectPage } from '../db/page.ts';
import type { PostureCategory, PostureStatus } from './catalog.ts';

export type DetectionRow = {
  category: PostureCategory;
  product: string;
  version: string | null;
  status: PostureStatus;
};

/**
 * Stores the snapshot's time unless a newer one is stored already (the latest snapshot is kept, whatever order
 * uploads arrive in). The conflicting row stays locked to the end of the transaction, so two uploads of one device
 * replace its detections one after the other. Undefined: an older snapshot, not applied.
 */
export function upsertPostureSnapshot(tx: Db, deviceId: string, orgId: string, collectedAt: string) {
  return one<{ collectedAt: Date }>(
    tx,
    `INSERT INTO device_posture AS p (device_id, org_id, collected_at)
     VALUES (:deviceId::uuid, :orgId::uuid, :collectedAt::timestamptz)
     ON CONFLICT (device_id) DO UPDATE SET collected_at = excluded.collected_at, received_at = now()
       WHERE p.collected_at <= excluded.collected_at
     RETURNING collected_at AS "collectedAt"`,
    { deviceId, orgId, collectedAt },
  );
}

/** Removes the device's detections and returns them: what the new snapshot replaces. */
export async function deleteDetections(tx: Db, deviceId: string) {
  const { rows } = await tx.query<DetectionRow>(
    `DELETE FROM device_posture_detections WHERE device_id = :deviceId::uuid
     RETURNING category, product, version, status`,
    { deviceId },
  );
  return rows;
}

export async function insertDetections(tx: Db, deviceId: string, orgId: string, detections: DetectionRow[]) {
  if (detections.length === 0) return;
  await tx.query(
    `INSERT INTO device_posture_detections (device_id, org_id, category, product, version, status)
     SELECT :deviceId::uuid, :orgId::uuid, r.category, r.product, r.version, r.status
       FROM jsonb_to_recordset(:rows::jsonb) AS r(category text, product text, version text, status text)`,
    { deviceId, orgId, rows: detections },
  );
}

/** The live devices of the organizations in reach, optionally one of them; `d`, `o` and `p` (the snapshot) joined. */
const scopedDevices = `devices d
  JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
  LEFT JOIN device_posture p ON p.device_id = d.id
  WHERE d.deleted_at IS NULL AND ${orgTenantSql('o')} AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)`;
const staleSql = `p.collected_at < now() - make_interval(days => :staleDays::int)`;

export interface ReportScope {
  orgId: string | null;
  staleDays: number;
}

/**
 * The four populations of the coverage, disjoint (issue 18): never scanned (no snapshot: never clean), stale (the
 * last snapshot older than the window, whatever it found), and among current snapshots clean and with a detection
 * (in the category when one is given).
 */
export function selectCoverage(db: Db, principal: Principal, scope: ReportScope & { category: string | null }) {
  const detected = `EXISTS (SELECT 1 FROM device_posture_detections x
    WHERE x.device_id = d.id AND (:category::text IS NULL OR x.category = :category::text))`;
  return one<{ devices: number; neverScanned: number; stale: number; clean: number; withDetection: number }>(
    db,
    `SELECT count(*)::int AS devices,
            count(*) FILTER (WHERE p.device_id IS NULL)::int AS "neverScanned",
            count(*) FILTER (WHERE ${staleSql})::int AS stale,
            count(*) FILTER (WHERE NOT ${staleSql} AND NOT ${detected})::int AS clean,
            count(*) FILTER (WHERE NOT ${staleSql} AND ${detected})::int AS "withDetection"
       FROM ${scopedDevices}`,
    { ...scope, ...tenantParams(principal) },
  ).then((row) => row!);
}

/** Per product: devices whose current snapshot finds it active or installed, and devices whose stale one found it. */
export async function selectProductCounts(
  db: Db,
  principal: Principal,
  scope: ReportScope & { category: string | null },
) {
  const { rows } = await db.query<{
    category: PostureCategory;
    product: string;
    active: number;
    installed: number;
    stale: number;
  }>(
    `SELECT x.category, x.product,
            count(*) FILTER (WHERE x.status = 'active' AND NOT ${staleSql})::int AS active,
            count(*) FILTER (WHERE x.status = 'installed' AND NOT ${staleSql})::int AS installed,
            count(*) FILTER (WHERE ${staleSql})::int AS stale
       FROM device_posture_detections x
       JOIN device_posture p ON p.device_id = x.device_id
       JOIN devices d ON d.id = x.device_id
       JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.deleted_at IS NULL AND ${orgTenantSql('o')} AND (:orgId::uuid IS NULL OR x.org_id = :orgId::uuid)
        AND (:category::text IS NULL OR x.category = :category::text)
      GROUP BY x.category, x.product
      ORDER BY x.category, x.product`,
    { ...scope, ...tenantParams(principal) },
  );
  return rows;
}

export type PostureDeviceRow = {
  deviceId: string;
  orgId: string;
  siteId: string;
  hostname: string;
  category: PostureCategory;
  product: string;
  version: string | null;
  status: PostureStatus;
  collectedAt: Date;
  stale: boolean;
};

/** The devices whose latest snapshot detected the product with the status, stale ones flagged. */
export function selectPostureDevices(
  db: Db,
  principal: Principal,
  filter: ReportScope & { product: string; status: PostureStatus },
  page: Page,
) {
  return selectPage<PostureDeviceRow>(
    db,
    `d.id AS "deviceId", d.org_id AS "orgId", d.site_id AS "siteId", d.hostname, x.category, x.product, x.version,
     x.status, p.collected_at AS "collectedAt", (${staleSql}) AS stale`,
    `device_posture_detections x
       JOIN device_posture p ON p.device_id = x.device_id
       JOIN devices d ON d.id = x.device_id
       JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE d.deleted_at IS NULL AND ${orgTenantSql('o')} AND (:orgId::uuid IS NULL OR x.org_id = :orgId::uuid)
        AND x.product = :product::text AND x.status = :status::text`,
    'd.hostname, d.id, x.category',
    { ...filter, ...tenantParams(principal) },
    page,
  );
}
