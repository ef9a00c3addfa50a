/**
 * The agent's complete scans: each scan of a source replaces what the device's previous scan of that source listed,
 * so a patch the scan no longer lists is gone (deleted, never counted as outstanding). The partner's catalogue keeps
 * one row per (source, externalId), with its severity and category normalised; a scan older than the stored one of
 * its source changes nothing. Scans are telemetry: no audit row.
 */
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import { type Db, one, prepared } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { normaliseCategory, normaliseSeverity } from '../policies/patch-vocabulary.ts';
import { armDailySnapshot, claimSnapshotDay } from './compliance.ts';
import type { InventoryUpload } from './schemas.ts';

/** The device's row and its scan row of the source, locked: two uploads of one device take turns. */
const lockScanSql = prepared(
  'patching_lock_scan',
  `WITH dev AS (
     SELECT d.id, d.org_id, o.partner_id FROM devices d JOIN organizations o ON o.id = d.org_id
      WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL FOR UPDATE OF d)
   SELECT dev.partner_id AS "partnerId",
          (SELECT s.scanned_at FROM device_patch_scans s
            WHERE s.device_id = dev.id AND s.source = :source::text FOR UPDATE) AS "scannedAt"
     FROM dev`,
);

/**
 * One statement applies a scan: the catalogue entries it lists that are new or changed (unchanged ones are neither
 * written nor locked), the device's rows of the patches that are new or changed state, the removal of what the scan no
 * longer lists, the scan row with its counts, the organization's kept counts of missing patches (what the previous
 * scan of the source listed as missing out, what this one lists in; only the rows that change are written), and the
 * claim of the organization's day for its snapshot.
 */
const applyScanSql = prepared(
  'patching_apply_scan',
  `WITH input AS (
     SELECT * FROM jsonb_to_recordset(:items::jsonb) AS i(
       "externalId" text, kb text, title text, vendor text, product text, severity text, category text,
       "vendorCategory" text, "releaseDate" timestamptz, "requiresReboot" boolean, supersedes jsonb, cves jsonb,
       state text)),
   known AS (
     SELECT i."externalId", p.id, p.number,
            (p.kb, p.title, p.vendor, p.product, p.severity, p.category, p.vendor_category, p.release_date,
             p.requires_reboot, p.supersedes, p.cves)
            IS DISTINCT FROM (coalesce(i.kb, p.kb), i.title, coalesce(i.vendor, p.vendor),
             coalesce(i.product, p.product),
             CASE WHEN i.severity = 'unspecified' THEN p.severity ELSE i.severity END,
             CASE WHEN i."vendorCategory" IS NULL THEN p.category ELSE i.category END,
             coalesce(i."vendorCategory", p.vendor_category), coalesce(i."releaseDate", p.release_date),
             i."requiresReboot", coalesce(i.supersedes, p.supersedes), coalesce(i.cves, p.cves)) AS changed
       FROM input i JOIN patches p ON p.partner_id = :partnerId::uuid AND p.source = :source::text
                                  AND p.external_id = i."externalId"),
   catalogue AS (
     INSERT INTO patches AS p (partner_id, source, external_id, kb, title, vendor, product, severity, category,
                               vendor_category, release_date, requires_reboot, supersedes, cves)
     SELECT :partnerId::uuid, :source::text, i."externalId", i.kb, i.title, i.vendor, i.product, i.severity,
            i.category, i."vendorCategory", i."releaseDate", i."requiresReboot", i.supersedes, i.cves
       FROM input i LEFT JOIN known k ON k."externalId" = i."externalId"
      WHERE k.id IS NULL OR k.changed
     ON CONFLICT (partner_id, source, external_id) DO UPDATE SET
       kb = coalesce(excluded.kb, p.kb), title = excluded.title, vendor = coalesce(excluded.vendor, p.vendor),
       product = coalesce(excluded.product, p.product),
       severity = CASE WHEN excluded.severity = 'unspecified' THEN p.severity ELSE excluded.severity END,
       category = CASE WHEN excluded.vendor_category IS NULL THEN p.category ELSE excluded.category END,
       vendor_category = coalesce(excluded.vendor_category, p.vendor_category),
       release_date = coalesce(excluded.release_date, p.release_date),
       requires_reboot = excluded.requires_reboot, supersedes = coalesce(excluded.supersedes, p.supersedes),
       cves = coalesce(excluded.cves, p.cves)
     RETURNING p.id, p.number, p.external_id),
   ids AS (
     SELECT i.state, coalesce(c.id, k.id) AS patch_id, coalesce(c.number, k.number) AS number
       FROM input i
       LEFT JOIN known k ON k."externalId" = i."externalId"
       LEFT JOIN catalogue c ON c.external_id = i."externalId"),
   existing AS (
     SELECT dp.patch_id, dp.source, dp.state, dp.org_id, dp.last_error FROM device_patches dp
      WHERE dp.device_id = :deviceId::uuid),
   upserted AS (
     INSERT INTO device_patches AS dp (device_id, patch_id, org_id, source, state)
     SELECT :deviceId::uuid, ids.patch_id, :orgId::uuid, :source::text, ids.state
       FROM ids LEFT JOIN existing e ON e.patch_id = ids.patch_id
      WHERE e.patch_id IS NULL OR e.state <> ids.state OR e.org_id <> :orgId::uuid
     ON CONFLICT (device_id, patch_id) DO UPDATE SET state = excluded.state, org_id = excluded.org_id,
       last_error = CASE WHEN excluded.state = 'failed' THEN dp.last_error END, updated_at = now()
      WHERE dp.state IS DISTINCT FROM excluded.state OR dp.org_id IS DISTINCT FROM excluded.org_id),
   gone AS (
     DELETE FROM device_patches dp
      WHERE dp.device_id = :deviceId::uuid
        AND dp.patch_id IN (SELECT e.patch_id FROM existing e WHERE e.source = :source::text
                             AND e.patch_id NOT IN (SELECT ids.patch_id FROM ids))
     RETURNING 1),
   scan AS (
     INSERT INTO device_patch_scans AS s (device_id, source, org_id, scan_id, scanned_at, installed, failed,
                                          pending_reboot, missing_numbers, last_error)
     SELECT :deviceId::uuid, :source::text, :orgId::uuid, :scanId::text, :scannedAt::timestamptz,
            count(*) FILTER (WHERE ids.state = 'installed'), count(*) FILTER (WHERE ids.state = 'failed'),
            count(*) FILTER (WHERE ids.state = 'pending-reboot'),
            coalesce(array_agg(ids.number ORDER BY ids.number) FILTER (WHERE ids.state = 'missing'), '{}'),
            max(e.last_error) FILTER (WHERE ids.state = 'failed')
       FROM ids LEFT JOIN existing e ON e.patch_id = ids.patch_id
     ON CONFLICT (device_id, source) DO UPDATE SET org_id = excluded.org_id, scan_id = excluded.scan_id,
       scanned_at = excluded.scanned_at, received_at = now(), installed = excluded.installed,
       failed = excluded.failed, pending_reboot = excluded.pending_reboot, missing_numbers = excluded.missing_numbers,
       last_error = excluded.last_error),
   missing AS (
     SELECT patch_missing_apply(coalesce(jsonb_agg(jsonb_build_object('orgId', m.org_id, 'patchId', m.patch_id,
                                                                       'delta', m.delta)), '[]'::jsonb))
       FROM (SELECT e.org_id, e.patch_id, -1 AS delta FROM existing e
              WHERE e.source = :source::text AND e.state = 'missing'
             UNION ALL
             SELECT :orgId::uuid, ids.patch_id, 1 FROM ids WHERE ids.state = 'missing') m),
   claimed AS (${claimSnapshotDay})
   SELECT (SELECT count(*)::int FROM gone) AS removed, EXISTS (SELECT 1 FROM claimed) AS claimed,
          (SELECT count(*)::int FROM missing) AS "missingCounted"`,
);

export async function uploadInventory(db: Db, caller: AgentPrincipal, agentId: string, scan: InventoryUpload) {
  const device = await deviceOfAgent(db, caller, agentId);
  const items = scan.items.map((item) => ({
    externalId: item.externalId,
    kb: item.kb ?? null,
    title: item.title,
    vendor: item.vendor ?? null,
    product: item.product ?? null,
    severity: normaliseSeverity(item.severity),
    category: normaliseCategory(item.category),
    vendorCategory: item.category ?? null,
    releaseDate: item.releaseDate ?? null,
    requiresReboot: item.requiresReboot,
    supersedes: item.supersedes ?? null,
    cves: item.cves ?? null,
    state: item.state,
  }));
  const today = new Date();
  const result = await db.transaction(async (tx) => {
    // An older scan than the stored one changes nothing.
    const stored = await one<{ partnerId: string; scannedAt: Date | null }>(tx, lockScanSql, {
      deviceId: device.id,
      source: scan.source,
    });
    if (!stored) throw NotFound('Agent');
    if (stored.scannedAt && stored.scannedAt > new Date(scan.scannedAt))
      return { applied: false, removed: 0, claimed: false };
    const { rows } = await tx.query<{ removed: number; claimed: boolean }>(applyScanSql, {
      items,
      partnerId: stored.partnerId,
      source: scan.source,
      deviceId: device.id,
      orgId: device.orgId,
      scanId: scan.scanId,
      scannedAt: scan.scannedAt,
      day: today.toISOString().slice(0, 10),
    });
    return { applied: true, removed: rows[0]!.removed, claimed: rows[0]!.claimed };
  });
  if (result.claimed) await armDailySnapshot(device.orgId, today);
  return {
    deviceId: device.id,
    scanId: scan.scanId,
    source: scan.source,
    scannedAt: new Date(scan.scannedAt),
    applied: result.applied,
    items: items.length,
    removed: result.removed,
  };
}
