-- Notification channels, escalation policies and the defaults that pick them (shared/notifications). A channel or
-- policy belongs to an organization, or to its partner (org_id null) and then serves every organization of it.
CREATE TABLE notification_channels (
  id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id               uuid NOT NULL REFERENCES partners (id),
  org_id                   uuid REFERENCES organizations (id),
  name                     varchar(255) NOT NULL,
  type                     varchar(20) NOT NULL CHECK (type IN ('email', 'webhook', 'slack', 'teams', 'pagerduty')),
  config                   jsonb NOT NULL,
  -- The webhook's HMAC key or PagerDuty's routing key: sealed at rest (secret_sealed), never returned.
  secret                   text,
  secret_sealed            boolean NOT NULL DEFAULT false,
  throttle_max             integer CHECK (throttle_max > 0),
  throttle_window_minutes  integer CHECK (throttle_window_minutes > 0),
  -- Set while a digest of throttled notifications is armed for this time; cleared when it is sent.
  digest_due_at            timestamptz,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  deleted_at               timestamptz,
  CHECK ((throttle_max IS NULL) = (throttle_window_minutes IS NULL))
);
--> statement-breakpoint
CREATE INDEX notification_channels_partner_idx ON notification_channels (partner_id, org_id, name) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Steps { afterMinutes, channelIds }: unacknowledged that long after it was raised, the alert goes to those channels.
CREATE TABLE escalation_policies (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid REFERENCES organizations (id),
  name        varchar(255) NOT NULL,
  steps       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz
);
--> statement-breakpoint
CREATE INDEX escalation_policies_partner_idx ON escalation_policies (partner_id, org_id, name) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Who is told of an alert by default: channel ids per severity, and an escalation policy. The row without org_id is
-- the partner's; an organization's row replaces it severity by severity.
CREATE TABLE notification_defaults (
  partner_id            uuid NOT NULL REFERENCES partners (id),
  org_id                uuid REFERENCES organizations (id),
  channels              jsonb NOT NULL DEFAULT '{}',
  escalation_policy_id  uuid REFERENCES escalation_policies (id),
  updated_at            timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE UNIQUE INDEX notification_defaults_idx
  ON notification_defaults (partner_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'));
--> statement-breakpoint
-- The delivery log: one row per notification of an alert on a channel (or a test, or a digest), with its attempts.
-- dedupe_key makes each (alert, channel, event, escalation step) one notification, however often it is armed.
CREATE TABLE notifications (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  channel_id       uuid NOT NULL REFERENCES notification_channels (id),
  alert_id         uuid REFERENCES alerts (id),
  org_id           uuid REFERENCES organizations (id),
  event            varchar(30) NOT NULL CHECK (event IN ('alert.created', 'alert.acknowledged', 'alert.resolved',
                                                          'alert.escalated', 'alert.digest', 'channel.test')),
  step             integer,
  dedupe_key       varchar(200) UNIQUE,
  -- pending → delivered | failed; throttled → digested (sent inside the digest notification digest_id).
  status           varchar(20) NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'delivered', 'failed', 'throttled', 'digested')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  last_error       text,
  -- One entry per attempt: { at, statusCode, error, durationMs }.
  log              jsonb NOT NULL DEFAULT '[]',
  digest_id        uuid,
  -- What is told: the alert as it was when armed, or a digest's items; rendered per channel type at each attempt.
  body             jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  delivered_at     timestamptz
);
--> statement-breakpoint
CREATE INDEX notifications_alert_idx ON notifications (alert_id, created_at) WHERE alert_id IS NOT NULL;
--> statement-breakpoint
-- The throttle counts a channel's recent notifications; the digest collects its throttled ones.
CREATE INDEX notifications_channel_idx ON notifications (channel_id, created_at);
--> statement-breakpoint
CREATE INDEX notifications_throttled_idx ON notifications (channel_id) WHERE status = 'throttled';
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON notification_channels, escalation_policies, notification_defaults, notifications
  TO logbook_app;
