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
 * Serializes the device's posture writes to the end of the transaction (its organization's lock shared: deleting the
 * organization waits for the upload) and reads what is stored: undefined when the device or its organization is
 * gone, else the stored snapshot's time (null: never scanned) and detections.
 */
export async function lockStoredSnapshot(tx: Db, deviceId: string, orgId: string) {
  await tx.query(
    `SELECT pg_advisory_xact_lock_shared(hashtextextended('device_posture_org:' || :orgId::text, 0)),
            pg_advisory_xact_lock(hashtextextended('device_posture:' || :deviceId::text, 0))`,
    { deviceId, orgId },
  );
  return one<{ partnerId: string; collectedAt: Date | null; detections: DetectionRow[] }>(
    tx,
    `SELECT o.partner_id AS "partnerId", p.collected_at AS "collectedAt",
            coalesce((SELECT jsonb_agg(jsonb_build_object('category', x.category, 'product', x.product,
                        'version', x.version, 'status', x.status) ORDER BY x.category, x.product)
                        FROM device_posture_detections x WHERE x.device_id = d.id), '[]') AS detections
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
       LEFT JOIN device_posture p ON p.device_id = d.id
      WHERE d.id = :deviceId::uuid AND d.org_id = :orgId::uuid AND d.deleted_at IS NULL`,
    { deviceId, orgId },
  );
}

type Snapshot = { collectedAt: string; detections: DetectionRow[] };

/**
 * Replaces the device's snapshot (under lockStoredSnapshot's lock) and moves the counts the report reads in the same
 * transaction: the stored snapshot's rows down by one, the new one's up (posture_count_keys, migration 0059), netted
 * so a rescan finding the same in the same hour writes no count. Count rows are locked the organization's first,
 * then the partner's, each in key order, as the deletion triggers lock them; a count down to 0 is removed.
 */
export async function replaceSnapshot(
  tx: Db,
  device: { id: string; orgId: string; partnerId: string },
  before: Snapshot | null,
  after: Snapshot,
) {
  const categories = [...new Set(after.detections.map((d) => d.category))].sort();
  await tx.query(
    `INSERT INTO device_posture AS p (device_id, org_id, collected_at, categories)
     VALUES (:deviceId::uuid, :orgId::uuid, :collectedAt::timestamptz,
             ARRAY(SELECT jsonb_array_elements_text(:categories::jsonb))::varchar[])
     ON CONFLICT (device_id) DO UPDATE
       SET collected_at = excluded.collected_at, categories = excluded.categories, received_at = now()`,
    { deviceId: device.id, orgId: device.orgId, collectedAt: after.collectedAt, categories },
  );
  if (before?.detections.length)
    await tx.query('DELETE FROM device_posture_detections WHERE device_id = :deviceId::uuid', { deviceId: device.id });
  if (after.detections.length)
    await tx.query(
      `INSERT INTO device_posture_detections (device_id, org_id, category, product, version, status, collected_at)
       SELECT :deviceId::uuid, :orgId::uuid, r.category, r.product, r.version, r.status, :collectedAt::timestamptz
         FROM jsonb_to_recordset(:rows::jsonb) AS r(category text, product text, version text, status text)`,
      { deviceId: device.id, orgId: device.orgId, collectedAt: after.collectedAt, rows: after.detections },
    );
  const keys = (snapshot: Snapshot | null) =>
    snapshot && {
      at: snapshot.collectedAt,
      detections: snapshot.detections.map(({ category, product, status }) => ({ category, product, status })),
    };
  // One statement: the organization's rows locked first, then the partner's (which every upload of the fleet
  // shares), each in key order; they stay locked to the commit.
  const { rows } = await tx.query<{ devices: number; key: unknown[] }>(
    `WITH change AS (
       SELECT k.scope_id, k.span, k.bucket, k.category, k.product, k.status, sum(k.delta)::int AS delta
         FROM (SELECT c.*, -1 AS delta FROM posture_count_keys(:orgId::uuid, :partnerId::uuid,
                 (:before::jsonb ->> 'at')::timestamptz, :before::jsonb -> 'detections') c
                WHERE :before::jsonb IS NOT NULL
               UNION ALL
               SELECT c.*, 1 FROM posture_count_keys(:orgId::uuid, :partnerId::uuid,
                 (:after::jsonb ->> 'at')::timestamptz, :after::jsonb -> 'detections') c) k
        GROUP BY 1, 2, 3, 4, 5, 6
       HAVING sum(k.delta) <> 0
     )
     INSERT INTO posture_counts AS c (scope_id, span, bucket, category, product, status, devices)
     SELECT scope_id, span, bucket, category, product, status, delta FROM change
      ORDER BY scope_id <> :orgId::uuid, scope_id, span, bucket, category, product, status
     ON CONFLICT (scope_id, span, bucket, category, product, status) DO UPDATE SET devices = c.devices + excluded.devices
     RETURNING c.devices, jsonb_build_array(c.scope_id, c.span, c.bucket, c.category, c.product, c.status) AS key`,
    { orgId: device.orgId, partnerId: device.partnerId, before: keys(before), after: keys(after) },
  );
  const emptied = rows.filter((r) => r.devices <= 0).map((r) => r.key);
  if (emptied.length)
    await tx.query(
      `DELETE FROM posture_counts c USING jsonb_array_elements(:keys::jsonb) k
        WHERE c.devices <= 0 AND c.scope_id = (k ->> 0)::uuid AND c.span = k ->> 1
          AND c.bucket = (k ->> 2)::timestamptz AND c.category = k ->> 3 AND c.product = k ->> 4
          AND c.status = k ->> 5`,
      { keys: emptied },
    );
}

/** The staleness boundary: a snapshot collected before it is stale at the time of the request (`asOf`). */
const boundarySql = `(:asOf::timestamptz - make_interval(days => :staleDays::int))`;
const staleSql = `p.collected_at < ${boundarySql}`;

export interface ReportScope {
  orgId: string | null;
  staleDays: number;
  /** The time of the request: staleness is measured from it. */
  asOf: Date;
}

/** The live organizations a report covers, with their partners. */
export async function selectReportOrganizations(db: Db, principal: Principal, orgId: string | null) {
  const { rows } = await db.query<{ id: string; partnerId: string }>(
    `SELECT o.id, o.partner_id AS "partnerId" FROM organizations o
      WHERE o.deleted_at IS NULL AND ${orgTenantSql('o')} AND (:orgId::uuid IS NULL OR o.id = :orgId::uuid)`,
    { orgId, ...tenantParams(principal) },
  );
  return rows;
}

/** The live devices of the organizations. */
export async function countDevices(db: Db, orgIds: string[]) {
  const row = await one<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM devices
      WHERE org_id IN (SELECT jsonb_array_elements_text(:orgIds::jsonb)::uuid) AND deleted_at IS NULL`,
    { orgIds },
  );
  return row!.n;
}

export type CountRow = { category: string; product: string; status: string; current: number; stale: number };

/**
 * Per key (posture_count_keys), the snapshots collected since the staleness boundary (`current`) and before it
 * (`stale`). `scopeIds` are the count rows' scopes (partners with `hourly`, else organizations) and `orgIds` the same
 * organizations, whose snapshots in the boundary's bucket (the hour with `hourly`, else the day) are read one by one.
 */
export async function selectCounts(
  db: Db,
  scope: {
    scopeIds: string[];
    orgIds: string[];
    hourly: boolean;
    staleDays: number;
    asOf: Date;
    category: string | null;
  },
) {
  // The boundary, its UTC day and hour, and the bucket read row by row: computed here, so that the planner sees
  // constants and reads each table by its index.
  const at = new Date(scope.asOf.getTime() - scope.staleDays * 86_400_000);
  const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
  const [lo, hi] = scope.hourly
    ? [hour, new Date(hour.getTime() + 3_600_000)]
    : [day, new Date(day.getTime() + 86_400_000)];
  const ids = (name: string) => `ARRAY(SELECT jsonb_array_elements_text(:${name}::jsonb)::uuid)`;
  const { rows } = await db.query<CountRow>(
    `WITH keyed AS (
       SELECT c.category, c.product, c.status,
              sum(c.devices) FILTER (WHERE c.bucket > CASE c.span WHEN 'day' THEN :day::timestamptz ELSE :hour::timestamptz END) AS current,
              sum(c.devices) FILTER (WHERE c.bucket < CASE c.span WHEN 'day' THEN :day::timestamptz ELSE :hour::timestamptz END) AS stale
         FROM posture_counts c
        WHERE c.scope_id = ANY (${ids('scopeIds')})
          AND ((c.span = 'day' AND c.bucket <> :day::timestamptz)
            OR (:hourly::boolean AND c.span = 'hour' AND c.bucket >= :day::timestamptz
                AND c.bucket < :day::timestamptz + interval '1 day' AND c.bucket <> :hour::timestamptz))
          AND (:category::text IS NULL OR c.category IN ('', :category::text))
        GROUP BY 1, 2, 3
     ), snapshots AS (
       SELECT p.collected_at, p.categories FROM device_posture p
        WHERE p.org_id = ANY (${ids('orgIds')}) AND p.collected_at >= :lo::timestamptz AND p.collected_at < :hi::timestamptz
     ), detail AS (
       SELECT '' AS category, '' AS product, 'scanned' AS status, s.collected_at FROM snapshots s
       UNION ALL SELECT '', '', 'detected', s.collected_at FROM snapshots s WHERE cardinality(s.categories) > 0
       UNION ALL SELECT c, '', 'detected', s.collected_at FROM snapshots s CROSS JOIN unnest(s.categories) c
       UNION ALL SELECT x.category, x.product, x.status, x.collected_at FROM device_posture_detections x
        WHERE x.org_id = ANY (${ids('orgIds')}) AND x.collected_at >= :lo::timestamptz AND x.collected_at < :hi::timestamptz
     ), edged AS (
       SELECT d.category, d.product, d.status, count(*) FILTER (WHERE d.collected_at >= :at::timestamptz) AS current,
              count(*) FILTER (WHERE d.collected_at < :at::timestamptz) AS stale
         FROM detail d
        WHERE :category::text IS NULL OR d.category IN ('', :category::text)
        GROUP BY 1, 2, 3
     )
     SELECT category, product, status, coalesce(sum(current), 0)::int AS current, coalesce(sum(stale), 0)::int AS stale
       FROM (SELECT * FROM keyed UNION ALL SELECT * FROM edged) t
      GROUP BY 1, 2, 3`,
    {
      scopeIds: scope.scopeIds,
      orgIds: scope.orgIds,
      hourly: scope.hourly,
      category: scope.category,
      at,
      day,
      hour,
      lo,
      hi,
    },
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
