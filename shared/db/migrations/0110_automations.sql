-- Automations (shared/automations): triggers (schedules, events, manual, an inbound webhook), device conditions in
-- the filter language of dynamic groups, ordered actions and guards. Owned by an organization, or by its partner
-- (org_id NULL), whose automations reach devices through policies of kind automation. Every change is a version.
CREATE TABLE automations (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id      uuid NOT NULL REFERENCES partners (id),
  -- NULL: the partner's library, applied where policies of kind automation assign it.
  org_id          uuid REFERENCES organizations (id),
  name            varchar(255) NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  version         integer NOT NULL DEFAULT 1,
  triggers        jsonb NOT NULL,
  conditions      jsonb,
  -- Secret script parameters are sealed here (never answered).
  actions         jsonb NOT NULL,
  guards          jsonb NOT NULL,
  -- The inbound webhook's HMAC key, sealed; shown once when it is rotated.
  webhook_secret  text,
  created_by      jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz
);
--> statement-breakpoint
CREATE INDEX automations_owner_idx ON automations (partner_id, org_id, lower(name), id) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Which automations an event can fire: read by each event without expanding any other automation.
CREATE INDEX automations_events_idx ON automations USING gin (triggers jsonb_path_ops) WHERE deleted_at IS NULL AND enabled;
--> statement-breakpoint
CREATE TABLE automation_versions (
  automation_id  uuid NOT NULL REFERENCES automations (id),
  version        integer NOT NULL,
  name           varchar(255) NOT NULL,
  enabled        boolean NOT NULL,
  triggers       jsonb NOT NULL,
  conditions     jsonb,
  actions        jsonb NOT NULL,
  guards         jsonb NOT NULL,
  created_by     jsonb NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (automation_id, version)
);
--> statement-breakpoint
-- A run: one firing of an automation in one organization, keyed by its occurrence (a schedule's local occurrence with
-- its zone, an event's id, a manual request's idempotency key), so a trigger delivered twice runs nothing twice. A
-- partner automation's firing is one run per organization its devices are in, filed under that organization.
CREATE TABLE automation_runs (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  automation_id       uuid NOT NULL REFERENCES automations (id),
  automation_version  integer NOT NULL,
  partner_id          uuid NOT NULL REFERENCES partners (id),
  org_id              uuid NOT NULL REFERENCES organizations (id),
  occurrence_key      varchar(300) NOT NULL,
  trigger             jsonb NOT NULL,
  started_by          jsonb NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (automation_id, occurrence_key, org_id)
);
--> statement-breakpoint
CREATE INDEX automation_runs_list_idx ON automation_runs (automation_id, created_at DESC, id);
--> statement-breakpoint
-- A run's device: what it did (each action's outcome, the script run items it started), or why it was skipped (the
-- loop guard, concurrency, a maintenance window).
CREATE TABLE automation_run_items (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  run_id                 uuid NOT NULL REFERENCES automation_runs (id),
  automation_id          uuid NOT NULL,
  device_id              uuid NOT NULL REFERENCES devices (id),
  org_id                 uuid NOT NULL REFERENCES organizations (id),
  -- Counted by the loop guard: every trigger but a manual run.
  guarded                boolean NOT NULL,
  status                 varchar(20) NOT NULL CHECK (status IN ('completed', 'failed', 'skipped', 'queued')),
  skip_reason            varchar(20) CHECK (skip_reason IN ('loop-guard', 'concurrency', 'maintenance')),
  maintenance_window_id  uuid,
  actions                jsonb NOT NULL DEFAULT '[]',
  created_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, device_id)
);
--> statement-breakpoint
CREATE INDEX automation_run_items_guard_idx ON automation_run_items (automation_id, device_id, created_at)
  WHERE status <> 'skipped';
--> statement-breakpoint
-- The script run items an automation run item started: the item's outcome follows theirs.
CREATE TABLE automation_run_scripts (
  run_item_id         uuid NOT NULL REFERENCES automation_run_items (id),
  action_index        integer NOT NULL,
  script_run_id       uuid NOT NULL REFERENCES script_runs (id),
  script_run_item_id  uuid NOT NULL REFERENCES script_run_items (id),
  PRIMARY KEY (run_item_id, action_index)
);
--> statement-breakpoint
CREATE INDEX automation_run_scripts_item_idx ON automation_run_scripts (script_run_item_id);
--> statement-breakpoint
-- Signatures of inbound webhook calls seen in the last minutes: a replay is refused.
CREATE TABLE automation_webhook_calls (
  automation_id  uuid NOT NULL,
  signature      varchar(100) NOT NULL,
  received_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (automation_id, signature)
);
--> statement-breakpoint
-- Alerts get a third source: the raise-alert action of an automation run.
ALTER TABLE alerts DROP CONSTRAINT alerts_source_type_check;
--> statement-breakpoint
ALTER TABLE alerts ADD CONSTRAINT alerts_source_type_check CHECK (source_type IN ('script', 'monitor', 'automation'));
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON automations, automation_versions, automation_runs, automation_run_items TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT ON automation_run_scripts TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, DELETE ON automation_webhook_calls TO logbook_app;
--> statement-breakpoint
-- Notifications get a fourth kind of event: an automation's notify action.
ALTER TABLE notifications DROP CONSTRAINT notifications_event_check;
--> statement-breakpoint
ALTER TABLE notifications ADD CONSTRAINT notifications_event_check
  CHECK (event IN ('alert.created', 'alert.acknowledged', 'alert.resolved', 'alert.escalated', 'alert.renotified',
                   'alert.digest', 'channel.test', 'automation.notify'));
