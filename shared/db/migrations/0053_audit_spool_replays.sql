-- issue 13: an audit row spooled to the work queue in AWS (shared/audit/spool.ts) is inserted by the queue worker
-- once only, however often SQS delivers its message: the replay claims the row's spool id in the idempotency table of
-- audit ingestion (principal_type 'audit_spool', principal_id the spool id) in the transaction that appends it.
ALTER TABLE audit_ingest_requests DROP CONSTRAINT audit_ingest_requests_principal_type_check;
--> statement-breakpoint
ALTER TABLE audit_ingest_requests
  ADD CONSTRAINT audit_ingest_requests_principal_type_check
  CHECK (principal_type IN ('user', 'api_key', 'audit_spool'));
