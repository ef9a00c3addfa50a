-- Idempotency keys of audit ingestion (0004_audit_ingest.sql) answer retries for 24 hours; the daily retention run
-- (logbook_audit_admin, shared/audit/retention.ts) deletes the older ones, so the table holds about a day of keys.
GRANT SELECT, DELETE ON audit_ingest_requests TO logbook_audit_admin;
--> statement-breakpoint
-- The purge finds the old keys by age.
CREATE INDEX audit_ingest_requests_created_idx ON audit_ingest_requests (created_at);
