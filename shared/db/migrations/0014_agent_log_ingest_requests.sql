-- issue 13: agent log uploads (POST /api/v1/agents/{id}/logs) honour an Idempotency-Key as audit
-- ingestion does (0004_audit_ingest.sql): an agent resending after an unknown outcome (a timeout, a
-- 503) gets the first reply and stores nothing twice. Same columns as audit_ingest_requests, so one
-- module serves both (shared/db/idempotency.ts); the principal is the agent (principal_type 'agent').
CREATE TABLE agent_log_ingest_requests (
  principal_type   varchar(16) NOT NULL CHECK (principal_type = 'agent'),
  principal_id     uuid NOT NULL,
  idempotency_key  varchar(255) NOT NULL,
  request_hash     char(64) NOT NULL,
  status           smallint,
  response         jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal_type, principal_id, idempotency_key),
  CHECK ((status IS NULL) = (response IS NULL))
);
--> statement-breakpoint
CREATE INDEX agent_log_ingest_requests_created ON agent_log_ingest_requests (created_at);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON agent_log_ingest_requests TO logbook_app;
--> statement-breakpoint
-- The daily retention run deletes keys past their lifetime, as it does for audit ingestion.
GRANT SELECT, DELETE ON agent_log_ingest_requests TO logbook_audit_admin;
