-- Management posture (issue 18): the latest snapshot an agent reported of what else manages its device. One row per
-- device with its collection time; a device without a row was never scanned, which the report never counts as clean.
CREATE TABLE device_posture (
  device_id     uuid PRIMARY KEY,
  org_id        uuid NOT NULL,
  collected_at  timestamptz NOT NULL,
  received_at   timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (device_id, org_id) REFERENCES devices (id, org_id)
);
--> statement-breakpoint
CREATE INDEX device_posture_org_idx ON device_posture (org_id, collected_at);
--> statement-breakpoint
-- The detections of a device's latest snapshot, replaced whole by the next one.
CREATE TABLE device_posture_detections (
  device_id  uuid NOT NULL REFERENCES device_posture (device_id) ON DELETE CASCADE,
  org_id     uuid NOT NULL,
  category   varchar(50) NOT NULL,
  product    varchar(255) NOT NULL,
  version    varchar(100),
  status     varchar(16) NOT NULL CHECK (status IN ('active', 'installed')),
  PRIMARY KEY (device_id, category, product)
);
--> statement-breakpoint
-- The report groups by product and status within an organization; the drill-down lists one product's devices.
CREATE INDEX device_posture_detections_org_idx ON device_posture_detections (org_id, category, product, status, device_id);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON device_posture, device_posture_detections TO logbook_app;
