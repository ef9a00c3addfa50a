-- Patching (shared/patching): the partner's catalogue of patches its agents reported, each device's latest complete
-- scan per source and the state of every patch it listed, the decisions taken per patch, the rings' own state (paused,
-- patches passed through the gate by hand), the install jobs of ring occurrences with their devices and results, and
-- the daily compliance counts of each organization.
CREATE TABLE patches (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id       uuid NOT NULL REFERENCES partners (id),
  source           varchar(20) NOT NULL CHECK (source IN ('windows-update', 'macos', 'apt', 'dnf', 'third-party')),
  external_id      varchar(255) NOT NULL,
  kb               varchar(50),
  title            varchar(1000) NOT NULL,
  vendor           varchar(255),
  product          varchar(255),
  severity         varchar(20) NOT NULL,
  category         varchar(20) NOT NULL,
  vendor_category  varchar(255),
  release_date     timestamptz,
  first_seen_at    timestamptz NOT NULL DEFAULT now(),
  requires_reboot  boolean NOT NULL DEFAULT false,
  supersedes       jsonb,
  cves             jsonb,
  UNIQUE (partner_id, source, external_id)
);
--> statement-breakpoint
CREATE INDEX patches_partner_idx ON patches (partner_id, severity, category);
--> statement-breakpoint
-- The latest complete scan of each (device, source): a scan older than the stored one changes nothing.
CREATE TABLE device_patch_scans (
  device_id    uuid NOT NULL REFERENCES devices (id),
  source       varchar(20) NOT NULL,
  org_id       uuid NOT NULL,
  scan_id      varchar(255) NOT NULL,
  scanned_at   timestamptz NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (device_id, source)
);
--> statement-breakpoint
CREATE INDEX device_patch_scans_org_idx ON device_patch_scans (org_id);
--> statement-breakpoint
-- What the latest scan of its source lists, and nothing more: a patch the scan no longer lists is deleted.
CREATE TABLE device_patches (
  device_id   uuid NOT NULL REFERENCES devices (id),
  patch_id    uuid NOT NULL REFERENCES patches (id),
  org_id      uuid NOT NULL,
  source      varchar(20) NOT NULL,
  state       varchar(20) NOT NULL CHECK (state IN ('missing', 'installed', 'failed', 'pending-reboot')),
  last_error  varchar(2000),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (device_id, patch_id)
);
--> statement-breakpoint
CREATE INDEX device_patches_org_idx ON device_patches (org_id, patch_id);
--> statement-breakpoint
CREATE INDEX device_patches_patch_idx ON device_patches (patch_id, state);
--> statement-breakpoint
-- A manual decision on a patch: the partner's (org_id NULL) or one organization's, for every ring or one (ring_id).
CREATE TABLE patch_decisions (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  patch_id    uuid NOT NULL REFERENCES patches (id),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid REFERENCES organizations (id),
  ring_id     uuid,
  decision    varchar(10) NOT NULL CHECK (decision IN ('approved', 'declined', 'deferred')),
  until       timestamptz,
  decided_by  jsonb,
  decided_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE UNIQUE INDEX patch_decisions_scope_idx ON patch_decisions
  (patch_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'), coalesce(ring_id, '00000000-0000-0000-0000-000000000000'));
--> statement-breakpoint
CREATE INDEX patch_decisions_partner_idx ON patch_decisions (partner_id, patch_id);
--> statement-breakpoint
-- A ring's own state (rings live in their patching policy's items): paused or not.
CREATE TABLE patch_ring_states (
  ring_id     uuid PRIMARY KEY,
  policy_id   uuid NOT NULL REFERENCES policies (id),
  paused      boolean NOT NULL DEFAULT false,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- Patches passed through a ring's gate by hand: the next ring may take them.
CREATE TABLE patch_ring_promotions (
  ring_id      uuid NOT NULL,
  patch_id     uuid NOT NULL REFERENCES patches (id),
  promoted_by  jsonb,
  promoted_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (ring_id, patch_id)
);
--> statement-breakpoint
-- One install job per (ring, occurrence): a scheduled occurrence's key is its local date-time, run-now's its key.
CREATE TABLE patch_jobs (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  ring_id         uuid NOT NULL,
  policy_id       uuid NOT NULL REFERENCES policies (id),
  partner_id      uuid NOT NULL REFERENCES partners (id),
  org_id          uuid REFERENCES organizations (id),
  occurrence_key  varchar(300) NOT NULL,
  manual          boolean NOT NULL DEFAULT false,
  starts_at       timestamptz NOT NULL,
  window_until    timestamptz NOT NULL,
  reboot_policy   varchar(20) NOT NULL,
  reboot_warning_minutes integer NOT NULL DEFAULT 15,
  created_by      jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (ring_id, occurrence_key)
);
--> statement-breakpoint
CREATE INDEX patch_jobs_ring_idx ON patch_jobs (ring_id, created_at DESC);
--> statement-breakpoint
-- A job's devices: what each is sent, and when; results come back per patch.
CREATE TABLE patch_job_devices (
  job_id            uuid NOT NULL REFERENCES patch_jobs (id),
  device_id         uuid NOT NULL REFERENCES devices (id),
  org_id            uuid NOT NULL,
  patch_ids         uuid[] NOT NULL,
  reboot_policy     varchar(20) NOT NULL,
  deadline          timestamptz,
  -- suppressed: held back by a maintenance window suppressing patching (maintenance_window_id) at the occurrence.
  status            varchar(20) NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'sent', 'finished', 'expired', 'suppressed')),
  maintenance_window_id uuid,
  sent_at           timestamptz,
  reboot_forced_at  timestamptz,
  finished_at       timestamptz,
  PRIMARY KEY (job_id, device_id)
);
--> statement-breakpoint
CREATE INDEX patch_job_devices_device_idx ON patch_job_devices (device_id, status);
--> statement-breakpoint
CREATE TABLE patch_job_results (
  job_id     uuid NOT NULL,
  device_id  uuid NOT NULL,
  patch_id   uuid NOT NULL,
  ring_id    uuid NOT NULL,
  outcome    varchar(20) NOT NULL CHECK (outcome IN ('installed', 'failed', 'reboot-required')),
  exit_code  integer,
  message    varchar(2000),
  at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, device_id, patch_id),
  FOREIGN KEY (job_id, device_id) REFERENCES patch_job_devices (job_id, device_id)
);
--> statement-breakpoint
CREATE INDEX patch_job_results_ring_idx ON patch_job_results (ring_id, patch_id);
--> statement-breakpoint
-- The compliance counts of each organization, once a day: the trend of the last 90 days.
CREATE TABLE patch_compliance_days (
  org_id  uuid NOT NULL REFERENCES organizations (id),
  day     date NOT NULL,
  counts  jsonb NOT NULL,
  PRIMARY KEY (org_id, day)
);
--> statement-breakpoint
-- The agent's facts on its heartbeat: a reboot pending, the last boot, whether the OS's own updater is suppressed.
ALTER TABLE devices ADD COLUMN reboot_pending boolean;
--> statement-breakpoint
ALTER TABLE devices ADD COLUMN last_boot_at timestamptz;
--> statement-breakpoint
ALTER TABLE devices ADD COLUMN os_updater_suppressed boolean;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON patches, device_patch_scans, patch_jobs TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON device_patches, patch_decisions, patch_ring_states, patch_ring_promotions,
  patch_job_devices, patch_job_results, patch_compliance_days TO logbook_app;
