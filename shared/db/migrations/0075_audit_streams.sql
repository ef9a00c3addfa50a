-- Audit streaming: destinations (a SIEM the partner or one organization sends its trail to) and, per destination and
-- organization, the cursor of what has been delivered. Delivery is at least once and in seq order: a cursor moves only
-- after the receiver took everything up to it, so a receiver that was down catches up from where it stopped.
CREATE TABLE audit_streams (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id      uuid NOT NULL REFERENCES partners (id),
  -- null: the partner's destination, serving every organization of the partner (availability "partner").
  org_id          uuid REFERENCES organizations (id),
  name            varchar(255) NOT NULL,
  type            varchar(20) NOT NULL CHECK (type IN ('syslog-tls', 'syslog-tcp', 'https', 'splunk-hec', 's3')),
  format          varchar(10) NOT NULL CHECK (format IN ('rfc5424', 'cef', 'ocsf', 'ndjson')),
  endpoint        varchar(2048) NOT NULL,
  -- The HMAC key (https) or the collector token (splunk-hec): sealed under the application's seal key, never returned.
  secret          text,
  secret_sealed   boolean NOT NULL DEFAULT false,
  ca_certificate  text,
  streams         jsonb NOT NULL DEFAULT '["audit"]',
  filter          jsonb NOT NULL DEFAULT '{}',
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz
);
--> statement-breakpoint
CREATE INDEX audit_streams_partner_idx ON audit_streams (partner_id) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX audit_streams_org_idx ON audit_streams (org_id) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Where a destination stands in one organization's trail. delivered_seq is the last seq the receiver took (0: none);
-- a replay moves it back and bumps epoch, so a delivery in flight cannot move it forward again over the replay.
-- leased_until: a delivery holds the cursor while it sends (one sender per cursor keeps the order); retry_at: after a
-- failed attempt, when the next one is due (writes before then do not hammer a receiver that is down).
CREATE TABLE audit_stream_cursors (
  stream_id       uuid NOT NULL REFERENCES audit_streams (id),
  org_id          uuid NOT NULL REFERENCES organizations (id),
  delivered_seq   bigint NOT NULL,
  delivered_at    timestamptz,
  -- Signed anchors taken after this instant are streamed too, each once the rows it covers were delivered.
  anchors_after   timestamptz NOT NULL DEFAULT now(),
  epoch           integer NOT NULL DEFAULT 0,
  leased_until    timestamptz,
  attempts        integer NOT NULL DEFAULT 0,
  retry_at        timestamptz,
  last_error      text,
  last_error_at   timestamptz,
  PRIMARY KEY (stream_id, org_id)
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON audit_streams, audit_stream_cursors TO logbook_app;
