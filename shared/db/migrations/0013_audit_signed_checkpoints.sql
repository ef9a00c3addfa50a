-- Signed retention cuts (issue 13): the database records each cut's last row as a checkpoint
-- (0003_audit.sql), but a superuser can delete a prefix and insert a matching checkpoint. The
-- retention worker therefore signs every checkpoint it causes, in the cut's own transaction, with
-- the anchor key only it can read (shared/audit/anchor-signing.ts, payload logbook-checkpoint-v1):
-- organization, last deleted seq and checksum, that row's timestamp, the policy's days, the instant
-- the windows were evaluated at, and whether the organization had been anchored. Every verifier
-- refuses a boundary checkpoint without a valid signature, or one whose last deleted row was not
-- older than retention_days before as_of.
CREATE TABLE audit_checkpoint_signatures (
  org_id          uuid NOT NULL,
  seq             bigint NOT NULL,
  -- The last deleted row's timestamp, canonical text (microseconds, UTC) as the chain covers it.
  last_timestamp  text NOT NULL,
  retention_days  integer NOT NULL CHECK (retention_days >= 1),
  as_of           timestamptz NOT NULL,
  -- Whether the organization had signed anchors (or the chain's record of its first one) at the cut,
  -- so deleting every anchor stays visible once retention has cut that record.
  anchored        boolean NOT NULL,
  key_id          varchar(64) NOT NULL,
  signature       text NOT NULL,
  PRIMARY KEY (org_id, seq)
);
--> statement-breakpoint
CREATE FUNCTION audit_signed_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_checkpoint_signatures_refuse_change BEFORE UPDATE OR DELETE ON audit_checkpoint_signatures FOR EACH STATEMENT EXECUTE FUNCTION audit_signed_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_checkpoint_signatures_refuse_truncate BEFORE TRUNCATE ON audit_checkpoint_signatures FOR EACH STATEMENT EXECUTE FUNCTION audit_signed_refuse_change();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_signed_refuse_change() FROM PUBLIC;
--> statement-breakpoint
GRANT SELECT, INSERT ON audit_checkpoint_signatures TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT ON audit_checkpoint_signatures TO logbook_app;
--> statement-breakpoint
-- The chain's record that an organization was anchored (system.audit.anchored, written once before
-- its first anchor): verifiers look it up per organization.
CREATE INDEX audit_logs_anchored_record ON audit_logs (org_id) WHERE action = 'system.audit.anchored';
