-- Management-posture report from counts kept at upload time (README "Management posture"). Each device's latest
-- snapshot counts once under keys (category, product, status): ('', '', 'scanned'), ('', '', 'detected') and
-- (<category>, '', 'detected') for the coverage, (<category>, <product>, active|installed) per detection; per
-- organization by UTC day of collection, and per partner by UTC day and by UTC hour. The report sums whole buckets on
-- either side of the staleness boundary and reads row by row only the snapshots of the one bucket that holds it
-- (a day for one organization, an hour for a partner's fleet), so stale counts are exact for any window and time.
-- Invariant: a snapshot is counted exactly when its device and organization are live.
ALTER TABLE device_posture_detections ADD COLUMN collected_at timestamptz;
--> statement-breakpoint
-- The categories with a detection: the boundary's coverage read without the detections.
ALTER TABLE device_posture ADD COLUMN categories varchar(50)[] NOT NULL DEFAULT '{}';
--> statement-breakpoint
DELETE FROM device_posture p USING devices d, organizations o
 WHERE d.id = p.device_id AND o.id = d.org_id AND (d.deleted_at IS NOT NULL OR o.deleted_at IS NOT NULL);
--> statement-breakpoint
UPDATE device_posture_detections x SET collected_at = p.collected_at FROM device_posture p WHERE p.device_id = x.device_id;
--> statement-breakpoint
ALTER TABLE device_posture_detections ALTER COLUMN collected_at SET NOT NULL;
--> statement-breakpoint
UPDATE device_posture p SET categories = ARRAY(
  SELECT DISTINCT x.category FROM device_posture_detections x WHERE x.device_id = p.device_id ORDER BY 1);
--> statement-breakpoint
-- The boundary bucket's detections, per organization.
CREATE INDEX device_posture_detections_collected_idx ON device_posture_detections (org_id, collected_at);
--> statement-breakpoint
CREATE TABLE posture_counts (
  scope_id  uuid NOT NULL,
  span      varchar(4) NOT NULL CHECK (span IN ('day', 'hour')),
  bucket    timestamptz NOT NULL,
  category  varchar(50) NOT NULL,
  product   varchar(255) NOT NULL,
  status    varchar(16) NOT NULL,
  devices   integer NOT NULL,
  PRIMARY KEY (scope_id, span, bucket, category, product, status)
);
--> statement-breakpoint
-- The rows one snapshot counts under (`detections`: a JSON array of { category, product, status }).
-- A single SELECT, without CTE, so that the planner inlines it into the statements that call it.
CREATE FUNCTION posture_count_keys(org uuid, partner uuid, collected timestamptz, detections jsonb)
RETURNS TABLE (scope_id uuid, span varchar, bucket timestamptz, category varchar, product varchar, status varchar)
LANGUAGE sql STABLE AS $$
  SELECT s.scope_id, s.span, s.bucket, k.category, k.product, k.status
    FROM (VALUES (org, 'day'::varchar, date_trunc('day', collected, 'UTC')),
                 (partner, 'day', date_trunc('day', collected, 'UTC')),
                 (partner, 'hour', date_trunc('hour', collected, 'UTC'))) s (scope_id, span, bucket)
   CROSS JOIN (
     SELECT ''::varchar, ''::varchar, 'scanned'::varchar
     UNION ALL SELECT '', '', 'detected' WHERE jsonb_array_length(coalesce(detections, '[]')) > 0
     UNION ALL SELECT DISTINCT d ->> 'category', '', 'detected' FROM jsonb_array_elements(coalesce(detections, '[]')) d
     UNION ALL SELECT d ->> 'category', d ->> 'product', d ->> 'status'
                 FROM jsonb_array_elements(coalesce(detections, '[]')) d
   ) k (category, product, status)
$$;
--> statement-breakpoint
-- The counts of the snapshots stored (this migration's backfill; the benchmark's bulk load).
CREATE FUNCTION posture_recount() RETURNS TABLE (
  scope_id uuid, span varchar, bucket timestamptz, category varchar, product varchar, status varchar, devices integer
) LANGUAGE sql STABLE AS $$
  SELECT k.scope_id, k.span, k.bucket, k.category, k.product, k.status, count(*)::int
    FROM device_posture p JOIN organizations o ON o.id = p.org_id
   CROSS JOIN LATERAL posture_count_keys(p.org_id, o.partner_id, p.collected_at, (
     SELECT jsonb_agg(jsonb_build_object('category', x.category, 'product', x.product, 'status', x.status))
       FROM device_posture_detections x WHERE x.device_id = p.device_id)) k
   GROUP BY 1, 2, 3, 4, 5, 6
$$;
--> statement-breakpoint
INSERT INTO posture_counts SELECT * FROM posture_recount();
--> statement-breakpoint
-- The rows a device's stored snapshot is counted under.
CREATE FUNCTION device_posture_keys(device uuid)
RETURNS TABLE (scope_id uuid, span varchar, bucket timestamptz, category varchar, product varchar, status varchar)
LANGUAGE sql STABLE AS $$
  SELECT k.* FROM device_posture p JOIN organizations o ON o.id = p.org_id
   CROSS JOIN LATERAL posture_count_keys(p.org_id, o.partner_id, p.collected_at, (
     SELECT jsonb_agg(jsonb_build_object('category', x.category, 'product', x.product, 'status', x.status))
       FROM device_posture_detections x WHERE x.device_id = p.device_id)) k
   WHERE p.device_id = device
$$;
--> statement-breakpoint
-- Takes a device's snapshot out of the counts and removes it: a deleted device, or one of a deleted organization.
-- Locks as an upload does (the organization's lock shared, then the device's; the organization's counts, then the
-- partner's, each in key order), so the two never deadlock and an upload either finishes first or finds the device gone.
CREATE FUNCTION device_posture_forget(device uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('device_posture:' || device::text, 0));
  PERFORM 1 FROM posture_counts c
   WHERE (c.scope_id, c.span, c.bucket, c.category, c.product, c.status) IN (SELECT * FROM device_posture_keys(device))
   ORDER BY c.scope_id <> (SELECT org_id FROM device_posture WHERE device_id = device), c.scope_id, c.span, c.bucket,
            c.category, c.product, c.status
     FOR UPDATE;
  UPDATE posture_counts c SET devices = c.devices - 1
   WHERE (c.scope_id, c.span, c.bucket, c.category, c.product, c.status) IN (SELECT * FROM device_posture_keys(device));
  DELETE FROM posture_counts c
   WHERE (c.scope_id, c.span, c.bucket, c.category, c.product, c.status) IN (SELECT * FROM device_posture_keys(device))
     AND c.devices <= 0;
  DELETE FROM device_posture WHERE device_id = device;
END
$$;
--> statement-breakpoint
CREATE FUNCTION device_posture_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtextextended('device_posture_org:' || NEW.org_id::text, 0));
  PERFORM device_posture_forget(NEW.id);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER devices_forget_posture AFTER UPDATE OF deleted_at ON devices
  FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION device_posture_forget_deleted();
--> statement-breakpoint
-- A deleted organization's snapshots leave its partner's counts; uploads of its devices wait, then find it gone.
CREATE FUNCTION organization_posture_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  device uuid;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('device_posture_org:' || NEW.id::text, 0));
  FOR device IN SELECT device_id FROM device_posture WHERE org_id = NEW.id ORDER BY device_id LOOP
    PERFORM device_posture_forget(device);
  END LOOP;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER organizations_forget_posture AFTER UPDATE OF deleted_at ON organizations
  FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION organization_posture_forget_deleted();
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON posture_counts TO logbook_app;
