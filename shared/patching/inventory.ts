/**
 * The agent's complete scans: each scan of a source replaces what the device's previous scan of that source listed,
 * so a patch the scan no longer lists is gone (deleted, never counted as outstanding). The partner's catalogue keeps
 * one row per (source, externalId), with its severity and category normalised; a scan older than the stored one of
 * its source changes nothing. Scans are telemetry: no audit row.
 */
import { deviceOfAgent } from '../agents/log-access.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import { type Db, one } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { normaliseCategory, normaliseSeverity } from '../policies/patch-vocabulary.ts';
import { armDailySnapshot } from './compliance.ts';
import type { InventoryUpload } from './schemas.ts';

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
  const result = await db.transaction(async (tx) => {
    // The scan row of the source, locked: two uploads of one device take turns, and an older scan changes nothing.
    const stored = await one<{ partnerId: string; scannedAt: Date | null }>(
      tx,
      `WITH dev AS (
         SELECT d.id, d.org_id, o.partner_id FROM devices d JOIN organizations o ON o.id = d.org_id
          WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL FOR UPDATE OF d)
       SELECT dev.partner_id AS "partnerId",
              (SELECT s.scanned_at FROM device_patch_scans s
                WHERE s.device_id = dev.id AND s.source = :source::text FOR UPDATE) AS "scannedAt"
         FROM dev`,
      { deviceId: device.id, source: scan.source },
    );
    if (!stored) throw NotFound('Agent');
    if (stored.scannedAt && stored.scannedAt > new Date(scan.scannedAt)) return { applied: false, removed: 0 };
    const { rows } = await tx.query<{ removed: number }>(
      `WITH input AS (
         SELECT * FROM jsonb_to_recordset(:items::jsonb) AS i(
           "externalId" text, kb text, title text, vendor text, product text, severity text, category text,
           "vendorCategory" text, "releaseDate" timestamptz, "requiresReboot" boolean, supersedes jsonb, cves jsonb,
           state text)),
       catalogue AS (
         INSERT INTO patches AS p (partner_id, source, external_id, kb, title, vendor, product, severity, category,
                                   vendor_category, release_date, requires_reboot, supersedes, cves)
         SELECT :partnerId::uuid, :source::text, i."externalId", i.kb, i.title, i.vendor, i.product, i.severity,
                i.category, i."vendorCategory", i."releaseDate", i."requiresReboot", i.supersedes, i.cves
           FROM input i
         ON CONFLICT (partner_id, source, external_id) DO UPDATE SET
           kb = coalesce(excluded.kb, p.kb), title = excluded.title, vendor = coalesce(excluded.vendor, p.vendor),
           product = coalesce(excluded.product, p.product),
           severity = CASE WHEN excluded.severity = 'unspecified' THEN p.severity ELSE excluded.severity END,
           category = CASE WHEN excluded.vendor_category IS NULL THEN p.category ELSE excluded.category END,
           vendor_category = coalesce(excluded.vendor_category, p.vendor_category),
           release_date = coalesce(excluded.release_date, p.release_date),
           requires_reboot = excluded.requires_reboot, supersedes = coalesce(excluded.supersedes, p.supersedes),
           cves = coalesce(excluded.cves, p.cves)
          WHERE (p.kb, p.title, p.vendor, p.product, p.severity, p.category, p.vendor_category, p.release_date,
                 p.requires_reboot, p.supersedes, p.cves)
                IS DISTINCT FROM (coalesce(excluded.kb, p.kb), excluded.title, coalesce(excluded.vendor, p.vendor),
                 coalesce(excluded.product, p.product),
                 CASE WHEN excluded.severity = 'unspecified' THEN p.severity ELSE excluded.severity END,
                 CASE WHEN excluded.vendor_category IS NULL THEN p.category ELSE excluded.category END,
                 coalesce(excluded.vendor_category, p.vendor_category), coalesce(excluded.release_date, p.release_date),
                 excluded.requires_reboot, coalesce(excluded.supersedes, p.supersedes), coalesce(excluded.cves, p.cves))
         RETURNING p.id, p.external_id),
       ids AS (
         SELECT i.state, coalesce(c.id, p.id) AS patch_id
           FROM input i
           LEFT JOIN catalogue c ON c.external_id = i."externalId"
           LEFT JOIN patches p ON c.id IS NULL AND p.partner_id = :partnerId::uuid AND p.source = :source::text
                              AND p.external_id = i."externalId"),
       upserted AS (
         INSERT INTO device_patches AS dp (device_id, patch_id, org_id, source, state)
         SELECT :deviceId::uuid, ids.patch_id, :orgId::uuid, :source::text, ids.state FROM ids
         ON CONFLICT (device_id, patch_id) DO UPDATE SET state = excluded.state, org_id = excluded.org_id,
           last_error = CASE WHEN excluded.state = 'failed' THEN dp.last_error END, updated_at = now()
          WHERE dp.state IS DISTINCT FROM excluded.state OR dp.org_id IS DISTINCT FROM excluded.org_id),
       gone AS (
         DELETE FROM device_patches dp
          WHERE dp.device_id = :deviceId::uuid AND dp.source = :source::text
            AND dp.patch_id NOT IN (SELECT patch_id FROM ids)
         RETURNING 1),
       scan AS (
         INSERT INTO device_patch_scans (device_id, source, org_id, scan_id, scanned_at)
         VALUES (:deviceId::uuid, :source::text, :orgId::uuid, :scanId::text, :scannedAt::timestamptz)
         ON CONFLICT (device_id, source) DO UPDATE SET org_id = excluded.org_id, scan_id = excluded.scan_id,
           scanned_at = excluded.scanned_at, received_at = now())
       SELECT (SELECT count(*)::int FROM gone) AS removed`,
      {
        items,
        partnerId: stored.partnerId,
        source: scan.source,
        deviceId: device.id,
        orgId: device.orgId,
        scanId: scan.scanId,
        scannedAt: scan.scannedAt,
      },
    );
    return { applied: true, removed: rows[0]!.removed };
  });
  if (result.applied) await armDailySnapshot(db, device.orgId);
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
