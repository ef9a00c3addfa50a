-- Idempotency-Key on every creating POST of the API, whoever calls: a retry with the key of a request already answered
-- gets its first reply, and does nothing. The key is claimed in the transaction of the request's change, so a change
-- never commits without its key (a retry then finds it) and a key is never kept without its change. The caller owns
-- its keys: principal_type user, api_key, agent, or enrollment_key (enrollment, scoped by the SHA-256 of the
-- enrollment key it presents).
CREATE TABLE idempotency_keys (
  principal_type   varchar(16) NOT NULL,
  principal_id     text NOT NULL,
  -- SHA-256 of the key, hex: the key itself seals the reply (below), so it is not stored.
  idempotency_key  char(64) NOT NULL,
  -- SHA-256 of method, path, query and body: another request under the same key is refused.
  request_hash     char(64) NOT NULL,
  -- The first reply (status, headers, body), sealed with AES-256-GCM under a key derived from the Idempotency-Key;
  -- NULL while the request runs, or when it ended with its change committed and its reply lost.
  reply            text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal_type, principal_id, idempotency_key)
);
--> statement-breakpoint
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON idempotency_keys TO logbook_app;
--> statement-breakpoint
-- The daily retention run deletes keys past their lifetime, as it does for audit ingestion's.
GRANT SELECT, DELETE ON idempotency_keys TO logbook_audit_admin;
--> statement-breakpoint
-- Agent log uploads claim their keys here now, like every other POST; their own table is gone.
DROP TABLE agent_log_ingest_requests;
