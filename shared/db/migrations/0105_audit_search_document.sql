-- One trigram index over one search document per audit entry, instead of six (docs/audit.md "Searching the trail").
--
-- The six trigram indexes of 0060_audit_chain_links.sql (action, actor e-mail, actor name, resource type, resource
-- name, details as text) cost every write six GIN insertions; they were most of an entry's index work. The
-- document holds the five parts a search (q) reads, in that order, one line each:
--
--   action, actor e-mail, resource type, resource name, details as text
--
-- A text without a line break matches the document exactly when it matches one of the parts (it cannot span the
-- break between two), so q is answered by the document alone. The other filters (user, action, resource) read the
-- document through this index and then their own columns exactly: the document holds each of their parts (the actor's
-- name as details show it, which is the name itself unless it holds a quote, a backslash or a control character;
-- such a user filter reads the columns only).
--
-- No org_id in the index (a btree_gin composite): measured, it cost the writes more than it saved the reads of
-- one organization (docs/audit.md).
--
-- IMMUTABLE and SQL, without a search_path of its own, so the planner inlines it alike in the index and in the query
-- (shared/audit/read-store.ts writes the same call); it names only pg_catalog operators and functions.
CREATE FUNCTION audit_search_document(action text, actor_email text, resource_type text, resource_name text, details jsonb)
RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT coalesce(action, '') || E'\n' || coalesce(actor_email, '') || E'\n' || coalesce(resource_type, '') || E'\n'
         || coalesce(resource_name, '') || E'\n' || coalesce(details::text, '')
$$;
--> statement-breakpoint
CREATE INDEX audit_entries_search_trgm_idx ON audit_entries
  USING gin (audit_search_document(action, actor_email, resource_type, resource_name, details) gin_trgm_ops);
--> statement-breakpoint
-- Whether a term is rare (collect the matches from the index) or common (walk the trail newest first until a page is
-- full) is judged from this expression's histogram, as it was from details' (0005_audit_search.sql).
ALTER INDEX audit_entries_search_trgm_idx ALTER COLUMN 1 SET STATISTICS 1000;
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
