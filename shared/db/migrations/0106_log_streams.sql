-- Device event logs and agent diagnostic logs streamed to audit-stream destinations (docs/audit-streaming.md
-- "Streams"), as the audit trail is: at least once, in order, from a cursor per (destination, organization, stream).
--
-- Their ordering key is stream_seq, counted per organization and stream in log_stream_heads by the INSERT that stores
-- the rows (shared/event-logs/store.ts, shared/agent-logs/store.ts): the statement takes the organization's head row,
-- numbers its rows after it, and holds the row until its transaction ends. A later insert of the organization gets
-- its numbers only once the earlier one committed (or rolled back), so the keys become visible in their order and a
-- cursor never passes a row that commits later. Keys are increasing, not gapless: an event skipped as a duplicate, or
-- a rolled-back insert, leaves its number unused.
--
-- A head exists only for the organizations a destination streams the log to (created with the destination's cursors,
-- or by the first delivery of an organization created later): the logs of every other organization get no key, and
-- their inserts take no lock and add nothing to the index below. Rows stored before this migration have no key and
-- are not streamed (a destination starts at the head anyway).
CREATE TABLE log_stream_heads (
  org_id  uuid NOT NULL REFERENCES organizations (id),
  source  varchar(20) NOT NULL CHECK (source IN ('device-events', 'agent-logs')),
  seq     bigint NOT NULL,
  PRIMARY KEY (org_id, source)
);
--> statement-breakpoint
ALTER TABLE device_event_logs ADD COLUMN stream_seq bigint;
--> statement-breakpoint
ALTER TABLE agent_logs ADD COLUMN stream_seq bigint;
--> statement-breakpoint
-- A delivery reads an organization's rows after its cursor in key order.
CREATE INDEX device_event_logs_org_stream_idx ON device_event_logs (org_id, stream_seq) WHERE stream_seq IS NOT NULL;
--> statement-breakpoint
CREATE INDEX agent_logs_org_stream_idx ON agent_logs (org_id, stream_seq) WHERE stream_seq IS NOT NULL;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON log_stream_heads TO logbook_app;
--> statement-breakpoint
-- One cursor per (destination, organization, stream): the audit trail's ('audit', by seq) and each log's (by
-- stream_seq). delivered_seq holds the stream's key; anchors_after matters to the audit stream only.
ALTER TABLE audit_stream_cursors
  ADD COLUMN source varchar(20) NOT NULL DEFAULT 'audit' CHECK (source IN ('audit', 'device-events', 'agent-logs'));
--> statement-breakpoint
ALTER TABLE audit_stream_cursors DROP CONSTRAINT audit_stream_cursors_pkey;
--> statement-breakpoint
ALTER TABLE audit_stream_cursors ADD PRIMARY KEY (stream_id, org_id, source);
