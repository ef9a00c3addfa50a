-- Integrity watch (issue 4, DESIGN.md "Audit chain"): after each daily retention run the worker
-- verifies every organization's chain since its last anchor and appends a signed anchor of its head,
-- its retention boundary and the set of organizations with a chain (shared/audit/anchors.ts,
-- integrity-watch.ts). Ed25519 signatures over a canonical payload (logbook-anchor-v1); the public
-- key is published (GET /api/v1/audit-logs/anchors) so copies kept outside the database witness the
-- chain: a rewrite with recomputed checksums no longer matches an anchor.
CREATE TABLE audit_anchors (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL REFERENCES organizations (id),
  -- The chain head anchored.
  seq                 bigint NOT NULL CHECK (seq >= 1),
  checksum            varchar(128) NOT NULL,
  -- The retention boundary: the first position the chain holds (seq of the latest checkpoint + 1),
  -- and the checksum the row there links to (the latest checkpoint's; null without one).
  first_retained_seq  bigint NOT NULL CHECK (first_retained_seq >= 1),
  boundary_checksum   varchar(128),
  -- The organizations with a chain head when the anchor was written: their number and the SHA-256
  -- (hex) of their sorted ids joined by '\n'.
  org_count           integer NOT NULL CHECK (org_count >= 1),
  orgs_digest         varchar(64) NOT NULL,
  anchored_at         timestamptz NOT NULL,
  -- The signing key: the first 16 hex digits of the SHA-256 of its public key (SPKI DER).
  key_id              varchar(64) NOT NULL,
  -- Ed25519 signature of the canonical payload, base64.
  signature           text NOT NULL
);
--> statement-breakpoint
CREATE INDEX audit_anchors_org ON audit_anchors (org_id, anchored_at DESC, seq DESC);
--> statement-breakpoint
-- Append-only, like the audit tables: no UPDATE, DELETE or TRUNCATE, not even by the owner.
CREATE FUNCTION audit_anchors_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  RAISE EXCEPTION 'audit_anchors is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_anchors_refuse_change BEFORE UPDATE OR DELETE ON audit_anchors FOR EACH STATEMENT EXECUTE FUNCTION audit_anchors_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_anchors_refuse_truncate BEFORE TRUNCATE ON audit_anchors FOR EACH STATEMENT EXECUTE FUNCTION audit_anchors_refuse_change();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_anchors_refuse_change() FROM PUBLIC;
--> statement-breakpoint
-- The worker writes anchors; the API reads them (GET /audit-logs/anchors, GET /audit-logs/verify).
GRANT SELECT, INSERT ON audit_anchors TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT ON audit_anchors TO logbook_app;
