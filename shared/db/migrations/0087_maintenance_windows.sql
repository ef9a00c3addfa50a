-- Maintenance windows (shared/maintenance): a schedule with a duration, targets, and what it suppresses. The window's
-- occurrence in progress is kept on the row (active_*), set by its start job (or by hand) and cleared by its end job,
-- so "is this device in maintenance now" is one indexed read and no rule is expanded on an alert's path.
CREATE TABLE maintenance_windows (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id        uuid NOT NULL REFERENCES partners (id),
  org_id            uuid REFERENCES organizations (id),
  name              varchar(255) NOT NULL,
  rrule             varchar(500),
  start_local       varchar(19) NOT NULL,
  timezone          varchar(64) NOT NULL,
  duration_minutes  integer NOT NULL CHECK (duration_minutes BETWEEN 1 AND 43200),
  exdates           jsonb NOT NULL DEFAULT '[]',
  misfire           jsonb NOT NULL DEFAULT '{"policy":"run-once-late","graceMinutes":60}',
  targets           jsonb NOT NULL,
  suppress          jsonb NOT NULL,
  allow_severity    varchar(10) CHECK (allow_severity IN ('low', 'medium', 'high', 'critical')),
  -- Bumped by every change: a job armed for an older version finds it moved and does nothing.
  version           integer NOT NULL DEFAULT 1,
  active_key        varchar(19),
  active_from       timestamptz,
  active_until      timestamptz,
  -- Started by hand ("maintenance now for 2 hours"), not by the schedule.
  active_manual     boolean NOT NULL DEFAULT false,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  deleted_at        timestamptz
);
--> statement-breakpoint
CREATE INDEX maintenance_windows_partner_idx ON maintenance_windows (partner_id, org_id, name) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX maintenance_windows_active_idx ON maintenance_windows (partner_id) WHERE active_until IS NOT NULL AND deleted_at IS NULL;
--> statement-breakpoint
-- The window that held an alert's notifications: { maintenanceWindowId } (null when none did).
ALTER TABLE alerts ADD COLUMN suppressed_by jsonb;
--> statement-breakpoint
CREATE INDEX alerts_suppressed_idx ON alerts ((suppressed_by ->> 'maintenanceWindowId'))
  WHERE suppressed_by IS NOT NULL AND status <> 'resolved';
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON maintenance_windows TO logbook_app;
