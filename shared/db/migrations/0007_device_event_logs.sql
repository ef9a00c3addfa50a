-- Device event logs (seed 2.6, 4.4): OS-level events the agent relays.
CREATE TYPE event_log_level AS ENUM ('info', 'warning', 'error', 'critical');
--> statement-breakpoint
CREATE TYPE event_log_category AS ENUM ('security', 'hardware', 'application', 'system');
--> statement-breakpoint
CREATE TABLE device_event_logs (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  device_id   uuid NOT NULL REFERENCES devices (id),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  -- When the event occurred; one more than 10 minutes ahead of the server is stored as the insert
  -- time with the submitted text in details.originalTimestamp (shared/event-logs/store.ts).
  timestamp   timestamptz NOT NULL,
  level       event_log_level NOT NULL,
  category    event_log_category NOT NULL,
  source      varchar(255) NOT NULL,
  event_id    varchar(100),
  message     text NOT NULL,
  details     jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The four indexes of seed 2.6.
CREATE INDEX device_event_logs_device_idx ON device_event_logs (device_id);
--> statement-breakpoint
CREATE INDEX device_event_logs_org_time_idx ON device_event_logs (org_id, timestamp);
--> statement-breakpoint
CREATE INDEX device_event_logs_category_level_idx ON device_event_logs (category, level);
--> statement-breakpoint
-- seed 2.6: a submitted event that conflicts with it is silently ignored (INSERT ... ON CONFLICT DO
-- NOTHING). NULLs stay distinct: events without an eventId are never duplicates of each other.
CREATE UNIQUE INDEX device_event_logs_device_source_event_key ON device_event_logs (device_id, source, event_id);
--> statement-breakpoint
-- GET /devices/:id/eventlogs reads one device in its order (timestamp DESC, id DESC), as
-- agent_logs_device_time_idx does; category and level filters (and the total) come from the index alone.
CREATE INDEX device_event_logs_device_time_idx ON device_event_logs (device_id, timestamp DESC, id DESC) INCLUDE (category, level);
--> statement-breakpoint
-- The API appends events and never changes them.
GRANT SELECT, INSERT ON device_event_logs TO logbook_app;
