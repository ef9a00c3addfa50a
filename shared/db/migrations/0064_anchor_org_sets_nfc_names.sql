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
--> statement-breakpoint
-- Names are stored in Unicode NFC (the API normalises them at input from now on), so "Café" typed precomposed or
-- decomposed is one name. Existing names are normalised here. Where a name's NFC form would collide with another
-- live name that must be unique (device groups per organization, scripts per owner, compared in lower case), the
-- row already holding it keeps it and the other keeps its stored form (of several that would newly share one, the
-- oldest is normalised): two existing objects are never merged or renamed away, and existing data never fails the
-- migration; such a row stays reachable by id and can be renamed. Normalisation needs a UTF8 server encoding (normalize()); under any other nothing is changed.
DO $$
BEGIN
  IF current_setting('server_encoding') <> 'UTF8' THEN
    RETURN;
  END IF;
  EXECUTE $sql$UPDATE organizations SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED$sql$;
  EXECUTE $sql$UPDATE sites SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED$sql$;
  EXECUTE $sql$UPDATE contacts SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED$sql$;
  EXECUTE $sql$UPDATE custom_field_definitions SET name = normalize(name, NFC) WHERE name IS NOT NFC NORMALIZED$sql$;
  -- Unique per organization (lower(name)): the oldest of the rows that would share a name is normalised, unless a
  -- row already holds that name.
  EXECUTE $sql$
    UPDATE device_groups g SET name = normalize(g.name, NFC)
      FROM (SELECT id, row_number() OVER (PARTITION BY org_id, lower(normalize(name, NFC)) ORDER BY created_at, id) AS n
              FROM device_groups WHERE name IS NOT NFC NORMALIZED) c
     WHERE g.id = c.id AND c.n = 1
       AND NOT EXISTS (SELECT FROM device_groups o
                        WHERE o.org_id = g.org_id AND o.id <> g.id AND lower(o.name) = lower(normalize(g.name, NFC)))$sql$;
  -- Unique per partner and organization among live scripts; deleted ones are normalised freely.
  EXECUTE $sql$UPDATE scripts SET name = normalize(name, NFC) WHERE deleted_at IS NOT NULL AND name IS NOT NFC NORMALIZED$sql$;
  EXECUTE $sql$
    UPDATE scripts s SET name = normalize(s.name, NFC)
      FROM (SELECT id, row_number() OVER (PARTITION BY partner_id, org_id, lower(normalize(name, NFC)) ORDER BY created_at, id) AS n
              FROM scripts WHERE deleted_at IS NULL AND name IS NOT NFC NORMALIZED) c
     WHERE s.id = c.id AND c.n = 1
       AND NOT EXISTS (SELECT FROM scripts o
                        WHERE o.partner_id = s.partner_id AND o.org_id IS NOT DISTINCT FROM s.org_id AND o.id <> s.id
                          AND o.deleted_at IS NULL AND lower(o.name) = lower(normalize(s.name, NFC)))$sql$;
END
$$;
