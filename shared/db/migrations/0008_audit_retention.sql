-- Audit retention (seed 2.4, 3, 6 "Retention behavior", 9): one policy per organization, read and
-- saved by the API, applied daily by the retention worker (shared/audit/retention.ts) as
-- logbook_audit_admin. The deletion rules themselves live in 0003_audit.sql: only that role's own
-- login with logbook.audit_retention = 'on' may delete, only the oldest contiguous rows of an
-- organization, and the database records each cut as a checkpoint.
--
-- seed 9.2: this migration creates no policy for the organizations that exist already; their rows
-- accumulate until a policy is saved (seed 6 retention rule 2). From now on every organization gets a
-- 365-day policy in the transaction that creates it (shared/hierarchy/organizations.ts createOrganization).
CREATE TABLE audit_retention_policies (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id           uuid NOT NULL UNIQUE REFERENCES organizations (id),
  -- seed 2.4 and 8: 365 days by default; at most ten years.
  retention_days   integer NOT NULL DEFAULT 365 CHECK (retention_days BETWEEN 1 AND 3650),
  -- seed 2.4: reserved; archiving before deletion is not implemented, so nobody but the owner sets it.
  archive_to_s3    boolean NOT NULL DEFAULT false,
  -- When the worker last applied the policy (seed 2.4 lastCleanupAt); written by the worker only.
  last_cleanup_at  timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The API creates policies (with each new organization, or on the first PUT) and changes their
-- retention; it cannot fake a cleanup or switch on the reserved archiving.
GRANT SELECT ON audit_retention_policies TO logbook_app;
--> statement-breakpoint
GRANT INSERT (org_id, retention_days), UPDATE (retention_days, updated_at) ON audit_retention_policies TO logbook_app;
--> statement-breakpoint
-- The worker reads the policies (and organizations, granted in 0002) and records its cleanups; it
-- cannot change what a policy keeps.
GRANT SELECT, UPDATE (last_cleanup_at) ON audit_retention_policies TO logbook_audit_admin;
--> statement-breakpoint
-- The worker writes one system event per organization it pruned (seed 2.2 actorType system:
-- "scheduled cleanups"), sealed into the chain like every row. It holds INSERT for that alone:
-- the trigger below refuses any other row from its login, so its credentials cannot forge user,
-- agent or API key events.
GRANT INSERT ON audit_logs TO logbook_audit_admin;
--> statement-breakpoint
CREATE FUNCTION audit_logs_refuse_admin_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM added a WHERE a.actor_type::text <> 'system' OR NOT starts_with(a.action::text, 'system.audit.')) THEN
    RAISE EXCEPTION 'logbook_audit_admin writes only its own system.audit.* events of actorType system'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- Fires only for statements of the worker's role (the login, or a session that SET ROLEs to it);
-- every other writer pays one comparison per statement.
CREATE TRIGGER audit_logs_refuse_admin_insert AFTER INSERT ON audit_logs REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (current_user = 'logbook_audit_admin' OR session_user = 'logbook_audit_admin')
  EXECUTE FUNCTION audit_logs_refuse_admin_insert();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_logs_refuse_admin_insert() FROM PUBLIC;
