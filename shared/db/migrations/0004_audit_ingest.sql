-- Ingestion of audit events that other platform components own (POST /api/v1/audit-logs/events).

-- An organization API key may carry the org_service role: a platform component's key whose only
-- permission is audit:write (shared/auth/permissions.ts).
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
--> statement-breakpoint
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ('org_admin', 'org_technician', 'org_viewer', 'org_service'));
--> statement-breakpoint
-- The first reply to each ingestion request that carried an Idempotency-Key: a retry by the same
-- principal within 24 hours gets it back and writes nothing. The row is inserted in the transaction
-- that appends the audit rows, so a concurrent duplicate waits on the primary key until the first
-- commits and then reads its reply (or claims the key itself when the first rolled back).
-- Not an audit table: a key older than 24 hours is replaced in place (UPDATE).
CREATE TABLE audit_ingest_requests (
  -- The reporting principal: actorType user (JWT sub) or api_key (key id).
  principal_type   varchar(16) NOT NULL CHECK (principal_type IN ('user', 'api_key')),
  principal_id     uuid NOT NULL,
  idempotency_key  varchar(255) NOT NULL,
  -- SHA-256 of the validated body: the same key with another body is refused (409 IDEMPOTENCY_KEY_REUSED).
  request_hash     char(64) NOT NULL,
  -- The reply, written before the claiming transaction commits, so no other transaction sees it missing.
  status           smallint,
  response         jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal_type, principal_id, idempotency_key),
  CHECK ((status IS NULL) = (response IS NULL))
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON audit_ingest_requests TO logbook_app;
