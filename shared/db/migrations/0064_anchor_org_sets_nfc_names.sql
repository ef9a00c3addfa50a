-- Whole-organization wipes: each anchor signs only the number and the digest of the organizations with a chain
-- (org_count, orgs_digest). The integrity watch now records the sorted ids behind each digest, once per distinct
-- set, so the verifiers can name an organization that was in an anchored set and no longer has a chain. A stored
-- list proves itself against the digest its anchors signed (sha256 of the ids, sorted, joined by '\n').
CREATE TABLE audit_anchor_org_sets (
  orgs_digest  varchar(64) PRIMARY KEY,
  org_ids      uuid[] NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- Organizations looked up by membership (GET /audit-logs/verify?orgId=).
CREATE INDEX audit_anchor_org_sets_members ON audit_anchor_org_sets USING gin (org_ids);
--> statement-breakpoint
-- Append-only, like the anchors.
CREATE FUNCTION audit_anchor_org_sets_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION 'audit_anchor_org_sets is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_anchor_org_sets_refuse_change BEFORE UPDATE OR DELETE ON audit_anchor_org_sets FOR EACH STATEMENT EXECUTE FUNCTION audit_anchor_org_sets_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_anchor_org_sets_refuse_truncate BEFORE TRUNCATE ON audit_anchor_org_sets FOR EACH STATEMENT EXECUTE FUNCTION audit_anchor_org_sets_refuse_change();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_anchor_org_sets_refuse_change() FROM PUBLIC;
--> statement-breakpoint
GRANT SELECT, INSERT ON audit_anchor_org_sets TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT ON audit_anchor_org_sets TO logbook_app;
