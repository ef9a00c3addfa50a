-- A heartbeat rewrites its device's row (last_seen_at, and the agent's version, status, role and serial as reported).
-- With last_seen_at itself indexed, every heartbeat was a new row version in every index of devices (about 1,100
-- bytes of WAL a beat); now the indexed copy is last_seen_hour, the hour (UTC) of last_seen_at, which changes once an
-- hour: the other heartbeats of the hour are heap-only updates (the new version on the same page, no index entry),
-- about 240 bytes of WAL (docs/benchmarks.md "Heartbeat writes"). The filters on lastSeenAt and online narrow by the
-- hour through the index and then test last_seen_at itself (shared/device-groups/filter.ts).
-- Room on each page for the heartbeat's new row version, so it stays heap-only once the page filled up: the table
-- is rewritten below (the stored column), so every page keeps a fifth free from now on.
ALTER TABLE devices SET (fillfactor = 80);
--> statement-breakpoint
ALTER TABLE devices ADD COLUMN last_seen_hour timestamp
  GENERATED ALWAYS AS (date_trunc('hour', last_seen_at AT TIME ZONE 'UTC')) STORED;
--> statement-breakpoint
DROP INDEX IF EXISTS devices_org_last_seen_idx;
--> statement-breakpoint
CREATE INDEX devices_org_last_seen_hour_idx ON devices (org_id, last_seen_hour) WHERE deleted_at IS NULL;
