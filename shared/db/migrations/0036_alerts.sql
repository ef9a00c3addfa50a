-- Alerts (seed 1, issue 17): raised by script runs (monitors later), bound per organization (with a partner-wide
-- default) to the platform's own tickets or to an external PSA integration (shared/alerts).
CREATE TABLE psa_integrations (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  name        varchar(255) NOT NULL,
  url         varchar(2048) NOT NULL,
  -- The HMAC-SHA256 key of the deliveries' signatures: read to sign, never returned by the API.
  secret      text NOT NULL,
  severities  jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
--> statement-breakpoint
CREATE INDEX psa_integrations_partner_idx ON psa_integrations (partner_id) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Where an organization's alerts go; the row without org_id is the partner-wide default (none: tickets).
CREATE TABLE alert_bindings (
  partner_id      uuid NOT NULL REFERENCES partners (id),
  org_id          uuid REFERENCES organizations (id),
  target          varchar(20) NOT NULL CHECK (target IN ('tickets', 'psa')),
  integration_id  uuid REFERENCES psa_integrations (id),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((target = 'psa') = (integration_id IS NOT NULL))
);
--> statement-breakpoint
CREATE UNIQUE INDEX alert_bindings_idx ON alert_bindings (partner_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'));
--> statement-breakpoint
-- The platform's own minimal tickets: numbered per partner.
CREATE TABLE ticket_counters (
  partner_id   uuid PRIMARY KEY REFERENCES partners (id),
  last_number  integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE tickets (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  number      integer NOT NULL,
  title       varchar(500) NOT NULL,
  status      varchar(10) NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  closed_at   timestamptz,
  UNIQUE (partner_id, number)
);
--> statement-breakpoint
CREATE INDEX tickets_org_idx ON tickets (org_id, created_at DESC, id DESC);
--> statement-breakpoint
CREATE TABLE alerts (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL REFERENCES organizations (id),
  partner_id          uuid NOT NULL REFERENCES partners (id),
  device_id           uuid REFERENCES devices (id),
  -- What raised it: a script run item today; monitors later.
  source_type         varchar(30) NOT NULL CHECK (source_type IN ('script')),
  source_id           uuid NOT NULL,
  -- What makes a repeat of the same failure (for scripts: the script), counted on the unresolved alert.
  source_key          varchar(100) NOT NULL,
  severity            varchar(10) NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
  title               varchar(500) NOT NULL,
  details             jsonb NOT NULL,
  status              varchar(20) NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'acknowledged', 'resolved')),
  occurrences         integer NOT NULL DEFAULT 1,
  last_occurred_at    timestamptz NOT NULL DEFAULT now(),
  last_source_id      uuid NOT NULL,
  acknowledged_at     timestamptz,
  acknowledged_by     jsonb,
  resolved_at         timestamptz,
  resolved_by         jsonb,
  ticket_id           uuid REFERENCES tickets (id),
  psa_integration_id  uuid REFERENCES psa_integrations (id),
  psa_ticket_id       varchar(255),
  created_at          timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- At most one unresolved alert per failure: a repeat counts occurrences on it instead of opening another.
CREATE UNIQUE INDEX alerts_unresolved_idx ON alerts (org_id, device_id, source_key) WHERE status <> 'resolved';
--> statement-breakpoint
-- Lists are newest first within an organization, with or without a status filter.
CREATE INDEX alerts_org_created_idx ON alerts (org_id, created_at DESC, id DESC);
--> statement-breakpoint
CREATE INDEX alerts_org_status_idx ON alerts (org_id, status, created_at DESC, id DESC);
--> statement-breakpoint
CREATE INDEX alerts_partner_created_idx ON alerts (partner_id, created_at DESC, id DESC);
--> statement-breakpoint
CREATE INDEX alerts_device_idx ON alerts (device_id, created_at DESC, id DESC);
--> statement-breakpoint
CREATE INDEX alerts_ticket_idx ON alerts (ticket_id) WHERE ticket_id IS NOT NULL;
--> statement-breakpoint
-- Each alert event sent to a PSA: signed JSON, retried with exponential backoff over more than 24 hours.
CREATE TABLE alert_deliveries (
  id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  alert_id          uuid NOT NULL REFERENCES alerts (id),
  integration_id    uuid NOT NULL REFERENCES psa_integrations (id),
  event             varchar(30) NOT NULL CHECK (event IN ('alert.created', 'alert.acknowledged', 'alert.resolved')),
  -- The exact bytes sent (and signed) on every attempt.
  body              text NOT NULL,
  status            varchar(20) NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz,
  last_status_code  integer,
  last_error        text,
  -- One entry per attempt: { at, statusCode, error, durationMs }.
  log               jsonb NOT NULL DEFAULT '[]',
  delivered_at      timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX alert_deliveries_alert_idx ON alert_deliveries (alert_id, created_at);
--> statement-breakpoint
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON psa_integrations, alert_bindings, ticket_counters, tickets, alerts, alert_deliveries
  TO logbook_app;
