-- Agent diagnostic logs (seed 2.5, 4.3), the agent's heartbeat status, and the per-device hourly
-- ingest budget that protects the database from a flooding agent (issue 5 "Flood protection").
-- No foreign key cascades: devices and organizations are only soft-deleted, and their logs stay.
CREATE TYPE agent_log_level AS ENUM ('debug', 'info', 'warn', 'error');
--> statement-breakpoint
CREATE TABLE agent_logs (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  device_id      uuid NOT NULL REFERENCES devices (id),
  org_id         uuid NOT NULL REFERENCES organizations (id),
  -- When the agent generated the entry; one more than 10 minutes ahead of the server is stored as
  -- the insert time with the submitted text in fields.originalTimestamp (shared/agent-logs/store.ts).
  timestamp      timestamptz NOT NULL,
  level          agent_log_level NOT NULL,
  component      varchar(100) NOT NULL,
  message        text NOT NULL,
  fields         jsonb NOT NULL DEFAULT '{}',
  agent_version  varchar(50),
  created_at     timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The four indexes of seed 2.5.
CREATE INDEX agent_logs_device_idx ON agent_logs (device_id);
--> statement-breakpoint
CREATE INDEX agent_logs_org_time_idx ON agent_logs (org_id, timestamp);
--> statement-breakpoint
CREATE INDEX agent_logs_level_component_idx ON agent_logs (level, component);
--> statement-breakpoint
-- By timestamp as a BRIN index: entries arrive close to time order, so block ranges summarize them well
-- for time-range scans across devices (retention), at a few pages and almost no ingest cost. A B-tree
-- here also offers the planner every row newest first, and it took that for one device's filtered page,
-- skipping every other device's newer rows (measured 280 ms instead of 0.1 ms on a million rows).
CREATE INDEX agent_logs_time_idx ON agent_logs USING brin (timestamp);
--> statement-breakpoint
-- GET /devices/:id/diagnostic-logs reads one device in its order (timestamp DESC, id DESC): a page stops
-- after offset + limit entries of this index, without a sort, and level and component filters (and the
-- partial hours of a total) are answered from the index alone.
CREATE INDEX agent_logs_device_time_idx ON agent_logs (device_id, timestamp DESC, id DESC) INCLUDE (level, component);
--> statement-breakpoint
-- search (seed 4.3: ILIKE on message) over a device's million entries: a trigram index lets the planner
-- collect the few matches of a rare word from a bitmap instead of reading every message (p95 measured
-- 1.5 s without, under 10 ms with: bench/ingest.ts). It costs ingest about a fifth of its throughput,
-- which stays above the 20,000 rows/s of issue 5. pg_trgm is a trusted extension the owner creates
-- (0001 grants CREATE on the database; 0005 created it already where it ran).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE INDEX agent_logs_message_trgm_idx ON agent_logs USING gin (message gin_trgm_ops);
--> statement-breakpoint
-- The number of entries per device, clock hour (UTC), level and component, kept by the database on
-- every insert. A page's total then adds up whole hours here and counts only the rows of the partial
-- hours at the ends of its time range: a device with a million rows is counted in milliseconds, not
-- by visiting a million index entries (GET /devices/:id/diagnostic-logs, shared/agent-logs/store.ts).
-- Rows of agent_logs are never updated or deleted by the service, so the counts stay exact.
CREATE TABLE agent_log_counts (
  device_id  uuid NOT NULL,
  hour       timestamptz NOT NULL,
  level      agent_log_level NOT NULL,
  component  varchar(100) NOT NULL,
  entries    bigint NOT NULL,
  PRIMARY KEY (device_id, hour, level, component)
);
--> statement-breakpoint
-- Once per statement, from its inserted rows. The rows of the counts are taken in key order, so two
-- concurrent inserts of one device wait for each other instead of deadlocking. SECURITY DEFINER (owner
-- logbook_owner): the API's role only reads the counts and cannot change them.
CREATE FUNCTION agent_logs_count() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
  INSERT INTO public.agent_log_counts AS c (device_id, hour, level, component, entries)
  SELECT n.device_id, date_trunc('hour', n.timestamp, 'UTC'), n.level, n.component, count(*)
    FROM inserted n
   GROUP BY 1, 2, 3, 4
   ORDER BY 1, 2, 3, 4
  ON CONFLICT (device_id, hour, level, component) DO UPDATE SET entries = c.entries + excluded.entries;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER agent_logs_count AFTER INSERT ON agent_logs REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION agent_logs_count();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION agent_logs_count() FROM PUBLIC;
--> statement-breakpoint
-- What the agent last reported about itself in its heartbeat (shared/agents/schemas.ts).
ALTER TABLE devices ADD COLUMN agent_status varchar(16) CHECK (agent_status IN ('online', 'degraded', 'maintenance'));
--> statement-breakpoint
-- Per-organization overrides of the hourly ingest budget per device; null (or no row) means the
-- default of shared/agents/ingest-budget.ts. Partner and platform users set them
-- (PUT /api/v1/orgs/organizations/:id/ingest-limits); 0 stops the organization's ingestion.
CREATE TABLE agent_ingest_limits (
  org_id                 uuid PRIMARY KEY REFERENCES organizations (id),
  logs_per_device_hour   integer CHECK (logs_per_device_hour BETWEEN 0 AND 10000000),
  events_per_device_hour integer CHECK (events_per_device_hour BETWEEN 0 AND 10000000),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  updated_by             uuid
);
--> statement-breakpoint
-- What each device used of its budget in the current clock hour, per kind of entry. One row per
-- device and kind, reset in place when a new hour begins, so the table never grows with time.
-- A request reserves its entries here before inserting (UPDATE ... WHERE used + n <= budget), so
-- concurrent requests of one device cannot overdraw it.
CREATE TABLE agent_ingest_usage (
  device_id     uuid NOT NULL REFERENCES devices (id),
  kind          varchar(6) NOT NULL CHECK (kind IN ('logs', 'events')),
  window_start  timestamptz NOT NULL,
  used          integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (device_id, kind)
);
--> statement-breakpoint
-- The API appends logs and never changes them.
GRANT SELECT, INSERT ON agent_logs TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON agent_log_counts TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON agent_ingest_limits, agent_ingest_usage TO logbook_app;
