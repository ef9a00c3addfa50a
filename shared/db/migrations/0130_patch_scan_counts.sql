-- The counts of each device's latest scan of a source, kept on its scan row by the writes that change the device's
-- patches (the upload of a scan, an install result), so the compliance report reads one row per device and source
-- instead of every device patch. `missing` holds the ids of the patches in state missing: their approval depends on
-- the device's ring and the decisions of the moment, so it is decided when the report is read.
ALTER TABLE device_patch_scans
  ADD COLUMN installed integer NOT NULL DEFAULT 0,
  ADD COLUMN failed integer NOT NULL DEFAULT 0,
  ADD COLUMN pending_reboot integer NOT NULL DEFAULT 0,
  ADD COLUMN missing uuid[] NOT NULL DEFAULT '{}',
  ADD COLUMN last_error varchar(2000);
--> statement-breakpoint
UPDATE device_patch_scans s
   SET installed = c.installed, failed = c.failed, pending_reboot = c.pending_reboot, missing = c.missing,
       last_error = c.last_error
  FROM (SELECT dp.device_id, dp.source,
               count(*) FILTER (WHERE dp.state = 'installed')::int AS installed,
               count(*) FILTER (WHERE dp.state = 'failed')::int AS failed,
               count(*) FILTER (WHERE dp.state = 'pending-reboot')::int AS pending_reboot,
               coalesce(array_agg(dp.patch_id ORDER BY dp.patch_id) FILTER (WHERE dp.state = 'missing'), '{}') AS missing,
               max(dp.last_error) FILTER (WHERE dp.state = 'failed') AS last_error
          FROM device_patches dp GROUP BY dp.device_id, dp.source) c
 WHERE c.device_id = s.device_id AND c.source = s.source;
--> statement-breakpoint
-- One index instead of two on the device patches, fewer to maintain per upload: the catalogue's counts and an
-- organization's patches read it by patch, then organization and state (index-only); a device's rows come by the
-- primary key.
DROP INDEX device_patches_org_idx;
--> statement-breakpoint
DROP INDEX device_patches_patch_idx;
--> statement-breakpoint
CREATE INDEX device_patches_patch_org_idx ON device_patches (patch_id, org_id, state);
--> statement-breakpoint
-- No foreign keys on the device patches: their rows are written by the scan upload, which holds the device's row
-- locked and takes the patch ids from the catalogue in the same statement, and by install results on those rows;
-- devices are only ever soft-deleted and catalogue entries never deleted. The per-row checks of the two keys took a
-- quarter of an upload's time.
ALTER TABLE device_patches DROP CONSTRAINT device_patches_device_id_fkey;
--> statement-breakpoint
ALTER TABLE device_patches DROP CONSTRAINT device_patches_patch_id_fkey;
