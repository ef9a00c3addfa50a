-- Policies: what applies to a device, of one kind (monitoring now; patching and automation reuse the model), owned by
-- the partner (a library its organizations can be assigned) or by one organization. Items are the policy's settings
-- by key; every change of the items is a new version, kept in policy_versions so an alert names what decided it.
CREATE TABLE policies (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  -- NULL: the partner's library, assignable in every organization of the partner.
  org_id      uuid REFERENCES organizations (id),
  kind        varchar(20) NOT NULL CHECK (kind IN ('monitoring', 'patching', 'automation')),
  name        varchar(255) NOT NULL,
  version     integer NOT NULL DEFAULT 1,
  items       jsonb NOT NULL,
  created_by  jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
--> statement-breakpoint
CREATE INDEX policies_partner_idx ON policies (partner_id, kind, lower(name), id) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE TABLE policy_versions (
  policy_id   uuid NOT NULL REFERENCES policies (id),
  version     integer NOT NULL,
  name        varchar(255) NOT NULL,
  items       jsonb NOT NULL,
  created_by  jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (policy_id, version)
);
--> statement-breakpoint
-- Where a policy applies: the partner, an organization, a site, a device group or a device, with a priority (lower
-- wins among assignments of one level) and optional narrowing by OS type and device role. org_id is the target's
-- organization (NULL for the partner level): a device's candidates are read by partner and organization.
CREATE TABLE policy_assignments (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  policy_id   uuid NOT NULL REFERENCES policies (id),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid REFERENCES organizations (id),
  kind        varchar(20) NOT NULL,
  level       varchar(20) NOT NULL CHECK (level IN ('partner', 'organization', 'site', 'group', 'device')),
  target_id   uuid NOT NULL,
  priority    integer NOT NULL DEFAULT 100 CHECK (priority BETWEEN 0 AND 1000000),
  os_types    jsonb,
  roles       jsonb,
  created_by  jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (policy_id, level, target_id)
);
--> statement-breakpoint
CREATE INDEX policy_assignments_candidates_idx ON policy_assignments (partner_id, kind, org_id);
--> statement-breakpoint
-- An exemption removes one item of one policy from a device, a site's devices or a group's members.
CREATE TABLE policy_exemptions (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  policy_id   uuid NOT NULL REFERENCES policies (id),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  item_key    varchar(100) NOT NULL,
  level       varchar(20) NOT NULL CHECK (level IN ('site', 'group', 'device')),
  target_id   uuid NOT NULL,
  reason      varchar(1000) NOT NULL,
  created_by  jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (policy_id, item_key, level, target_id)
);
--> statement-breakpoint
CREATE INDEX policy_exemptions_org_idx ON policy_exemptions (org_id, policy_id);
--> statement-breakpoint
-- Block inheritance: an organization stops partner-level assignments; a site stops partner- and organization-level ones.
ALTER TABLE organizations ADD COLUMN policy_inheritance_blocked boolean NOT NULL DEFAULT false;
--> statement-breakpoint
ALTER TABLE sites ADD COLUMN policy_inheritance_blocked boolean NOT NULL DEFAULT false;
--> statement-breakpoint
-- The device's role as its agent reports it (heartbeat, enrollment); assignments narrow by it.
ALTER TABLE devices ADD COLUMN role varchar(20) CHECK (role IN ('workstation', 'server'));
--> statement-breakpoint
-- How long metric samples and check results are kept; NULL: 30 days.
ALTER TABLE organizations ADD COLUMN monitoring_retention_days integer CHECK (monitoring_retention_days BETWEEN 1 AND 3650);
--> statement-breakpoint
-- Metric samples as the agent sent them, once per (device, metric, volume, time): a late or repeated sample is
-- stored once. volume is '' for metrics without one.
CREATE TABLE device_metric_samples (
  device_id  uuid NOT NULL,
  metric     varchar(40) NOT NULL,
  volume     varchar(255) NOT NULL DEFAULT '',
  at         timestamptz NOT NULL,
  org_id     uuid NOT NULL,
  value      double precision NOT NULL,
  PRIMARY KEY (device_id, metric, volume, at)
);
--> statement-breakpoint
-- Samples arrive roughly in time order: a block range index serves the daily prune at almost no write cost.
CREATE INDEX device_metric_samples_at_idx ON device_metric_samples USING brin (at);
--> statement-breakpoint
CREATE TABLE monitor_check_results (
  device_id  uuid NOT NULL,
  item_key   varchar(100) NOT NULL,
  at         timestamptz NOT NULL,
  org_id     uuid NOT NULL,
  status     varchar(10) NOT NULL CHECK (status IN ('pass', 'fail')),
  value      double precision,
  output     varchar(4000),
  PRIMARY KEY (device_id, item_key, at)
);
--> statement-breakpoint
CREATE INDEX monitor_check_results_at_idx ON monitor_check_results USING brin (at);
--> statement-breakpoint
-- The state of each effective monitoring item on each device: never held in a process's memory. condition_since is
-- when the condition that moves the state on (to firing while pending, to ok while firing) started to hold;
-- armed_until is when the job that judges an absence (offline) is due.
CREATE TABLE monitor_states (
  device_id          uuid NOT NULL REFERENCES devices (id),
  item_key           varchar(100) NOT NULL,
  org_id             uuid NOT NULL,
  policy_id          uuid NOT NULL,
  policy_version     integer NOT NULL,
  item_type          varchar(20) NOT NULL,
  state              varchar(10) NOT NULL DEFAULT 'ok' CHECK (state IN ('ok', 'pending', 'firing')),
  since              timestamptz NOT NULL,
  condition_since    timestamptz,
  last_value         double precision,
  last_evaluated_at  timestamptz,
  fired_count        integer NOT NULL DEFAULT 0,
  resolved_count     integer NOT NULL DEFAULT 0,
  alert_id           uuid,
  last_notified_at   timestamptz,
  armed_until        timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (device_id, item_key)
);
--> statement-breakpoint
-- Alerts get their second source: a monitoring item of a policy.
ALTER TABLE alerts DROP CONSTRAINT alerts_source_type_check;
--> statement-breakpoint
ALTER TABLE alerts ADD CONSTRAINT alerts_source_type_check CHECK (source_type IN ('script', 'monitor'));
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON policies, policy_versions TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON policy_assignments, policy_exemptions, monitor_states TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, DELETE ON device_metric_samples, monitor_check_results TO logbook_app;
--> statement-breakpoint
-- The daily retention run prunes samples and check results past each organization's monitoring retention.
GRANT SELECT, DELETE ON device_metric_samples, monitor_check_results TO logbook_audit_admin;
