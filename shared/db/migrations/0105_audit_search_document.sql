-- One trigram index over each entry's action and one search document, instead of six (docs/audit.md "Searching the
-- trail").
--
-- The six trigram indexes of 0060_audit_chain_links.sql (action, actor e-mail, actor name, resource type, resource
-- name, details as text) cost every write six GIN insertions; they were most of an entry's index work. Now one GIN
-- index of two columns: the action, and a document of the other four parts a search (q) reads, one line each:
--
--   actor e-mail, resource type, resource name, details as text
--
-- A text without a line break matches the document exactly when it matches one of those parts (it cannot span the
-- break between two), so q is the action or the document. The action filter reads the action's column as before. The
-- user and resource filters read the document through the index, then their own columns exactly: the document holds
-- each of their parts (the actor's name as details show it, which is the name itself unless it holds a quote, a
-- backslash or a control character; such a user filter reads the columns only).
--
-- The action apart from the rest is what lets a search's exact total add the counts per action (below) of the actions
-- it matches to the entries it matches only elsewhere, found in the document's column alone.
--
-- No org_id in the index (a btree_gin composite): measured, it cost the writes more than it saved the reads of one
-- organization (docs/audit.md).
--
-- IMMUTABLE and SQL, without a search_path of its own, so the planner inlines it alike in the index and in the query
-- (shared/audit/read-store.ts writes the same call); it names only pg_catalog operators and functions.
CREATE FUNCTION audit_search_document(actor_email text, resource_type text, resource_name text, details jsonb)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT coalesce(actor_email, '') || E'\n' || coalesce(resource_type, '') || E'\n' || coalesce(resource_name, '')
         || E'\n' || coalesce(details::text, '')
$$;
--> statement-breakpoint
CREATE INDEX audit_entries_search_trgm_idx ON audit_entries
  USING gin (action gin_trgm_ops, audit_search_document(actor_email, resource_type, resource_name, details) gin_trgm_ops);
--> statement-breakpoint
-- Whether a term is rare (collect the matches from the index) or common (walk the trail newest first until a page is
-- full) is judged from this expression's histogram, as it was from details' (0005_audit_search.sql).
ALTER INDEX audit_entries_search_trgm_idx ALTER COLUMN 2 SET STATISTICS 1000;
--> statement-breakpoint
DROP INDEX audit_entries_action_trgm_idx;
--> statement-breakpoint
DROP INDEX audit_entries_actor_email_trgm_idx;
--> statement-breakpoint
DROP INDEX audit_entries_actor_name_trgm_idx;
--> statement-breakpoint
DROP INDEX audit_entries_resource_type_trgm_idx;
--> statement-breakpoint
DROP INDEX audit_entries_resource_name_trgm_idx;
--> statement-breakpoint
DROP INDEX audit_entries_details_trgm_idx;
--> statement-breakpoint
ANALYZE audit_entries;
--> statement-breakpoint
-- How many sealed entries each organization has of each action (docs/audit.md "Searching the trail"): an exact total
-- of a filter on the action alone (action, the reports' action lists) is then a sum over a few rows instead of a
-- visit of every matching row. Written only by the sealing trigger (in the statement that seals the entries, under
-- the organization's lock) and by the retention cut (audit_entries_uncount below); read by everyone who reads the trail.
CREATE TABLE audit_action_counts (
  org_id  uuid NOT NULL,
  action  varchar(100) NOT NULL,
  n       bigint NOT NULL,
  PRIMARY KEY (org_id, action)
);
--> statement-breakpoint
INSERT INTO audit_action_counts (org_id, action, n)
SELECT e.org_id, e.action, count(*)
  FROM audit_entries e JOIN audit_chain_links l ON l.pos = e.pos AND l.org_id = e.org_id
 GROUP BY e.org_id, e.action;
--> statement-breakpoint
-- The seal of 0060_audit_chain_links.sql, adding each statement's entries to their counts at its end.
CREATE OR REPLACE FUNCTION audit_entries_seal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  orgs uuid[];
  positions bigint[];
  -- Canonical payload v1 (DESIGN.md): 'logbook-audit-v1', id, org_id, then seq, then the fields, then prev_checksum.
  leads text[];
  fields text[];
  seqs bigint[];
  checksums text[];
  prevs text[];
  org uuid;
  latest_seq bigint;
  latest_checksum text;
  foreign_position boolean;
BEGIN
  -- Only a fresh snapshot taken after the lock sees the previous writer's head; a REPEATABLE READ
  -- snapshot would predate it and fork the chain under load, so it is refused outright.
  IF current_setting('transaction_isolation'::text) <> 'read committed' THEN
    RAISE EXCEPTION 'audit rows are written in READ COMMITTED transactions, not %', current_setting('transaction_isolation'::text)
      USING ERRCODE = 'invalid_transaction_state';
  END IF;
  -- A position beyond what the identity has handed out (OVERRIDING SYSTEM VALUE) would collide with a later writer's.
  -- Each array in the order the rows are sealed: by organization, then as inserted ((org_id, pos) is unique).
  SELECT array_agg(s.org_id ORDER BY s.org_id, s.pos), array_agg(s.pos ORDER BY s.org_id, s.pos),
         array_agg(s.lead ORDER BY s.org_id, s.pos), array_agg(s.fields ORDER BY s.org_id, s.pos),
         max(s.pos) > (SELECT q.last_value FROM public.audit_entries_pos_seq q) OR min(s.pos) < 1
    INTO orgs, positions, leads, fields, foreign_position
    FROM (
      SELECT a.org_id, a.pos,
             concat_ws(E'\n'::text, 'logbook-audit-v1'::text, public.audit_canonical_field(a.id::text),
                       public.audit_canonical_field(a.org_id::text)) AS lead,
             concat_ws(E'\n'::text,
               public.audit_canonical_field(to_char(a.timestamp AT TIME ZONE 'UTC'::text, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'::text)),
               public.audit_canonical_field(a.actor_type::text),
               public.audit_canonical_field(a.actor_id::text),
               public.audit_canonical_field(a.actor_email::text),
               public.audit_canonical_field(a.action::text),
               public.audit_canonical_field(a.resource_type::text),
               public.audit_canonical_field(a.resource_id::text),
               public.audit_canonical_field(a.resource_name::text),
               public.audit_canonical_field(a.details::text),
               public.audit_canonical_field(a.ip_address::text),
               public.audit_canonical_field(a.user_agent),
               public.audit_canonical_field(a.result::text),
               public.audit_canonical_field(a.error_message)) AS fields
        FROM added a
    ) s;
  IF orgs IS NULL THEN
    RETURN NULL;
  END IF;
  IF foreign_position THEN
    RAISE EXCEPTION 'audit_entries.pos is set by the database only' USING ERRCODE = 'insufficient_privilege';
  END IF;
  seqs := array_fill(NULL::bigint, ARRAY[cardinality(orgs)]);
  checksums := array_fill(NULL::text, ARRAY[cardinality(orgs)]);
  prevs := array_fill(NULL::text, ARRAY[cardinality(orgs)]);
  FOR i IN 1 .. cardinality(orgs) LOOP
    IF org IS DISTINCT FROM orgs[i] THEN
      org := orgs[i];
      PERFORM pg_advisory_xact_lock(1, ('x'::text || left(org::text, 8))::bit(32)::integer);
      latest_seq := 0;
      latest_checksum := NULL;
      SELECT h.seq, h.checksum INTO latest_seq, latest_checksum FROM public.audit_chain_heads h WHERE h.org_id = org;
      latest_seq := coalesce(latest_seq, 0);
    END IF;
    latest_seq := latest_seq + 1;
    seqs[i] := latest_seq;
    prevs[i] := latest_checksum;
    latest_checksum := encode(sha256(convert_to(concat_ws(E'\n'::text, leads[i],
      public.audit_canonical_field(latest_seq::text), fields[i], public.audit_canonical_field(latest_checksum)), 'UTF8'::name)), 'hex'::text);
    checksums[i] := latest_checksum;
  END LOOP;
  WITH linked AS (
    INSERT INTO public.audit_chain_links (org_id, seq, pos, checksum, prev_checksum)
    SELECT * FROM unnest(orgs, seqs, positions, checksums, prevs)
  )
  INSERT INTO public.audit_chain_heads AS h (org_id, seq, checksum, updated_at)
  SELECT DISTINCT ON (s.org_id) s.org_id, s.seq, s.checksum, now()
    FROM unnest(orgs, seqs, checksums) AS s(org_id, seq, checksum) ORDER BY s.org_id, s.seq DESC
  ON CONFLICT (org_id) DO UPDATE SET seq = excluded.seq, checksum = excluded.checksum, updated_at = excluded.updated_at;
  -- The organizations' counts per action, under the locks taken above (so no other statement waits on their rows
  -- that does not already wait on the lock), in organization and action order.
  INSERT INTO public.audit_action_counts AS c (org_id, action, n)
  SELECT a.org_id, a.action, count(*) FROM added a GROUP BY a.org_id, a.action ORDER BY a.org_id, a.action
  ON CONFLICT (org_id, action) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$$;
--> statement-breakpoint
-- A retention cut takes its entries off their counts (never below zero: an entry written with the triggers off was
-- never counted).
CREATE FUNCTION audit_entries_uncount() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  UPDATE public.audit_action_counts c SET n = greatest(c.n - r.n, 0)
    FROM (SELECT d.org_id, d.action, count(*) AS n FROM removed d GROUP BY d.org_id, d.action) r
   WHERE c.org_id = r.org_id AND c.action = r.action;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_entries_uncount AFTER DELETE ON audit_entries REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_uncount();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_entries_uncount() FROM PUBLIC;
--> statement-breakpoint
GRANT SELECT ON audit_action_counts TO logbook_app, logbook_audit_admin;
