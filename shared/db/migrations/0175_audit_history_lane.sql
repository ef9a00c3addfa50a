-- The history lane (docs/audit.md "Importing history"): where an import of another system's audit history lands,
-- sealed into the organization's chain like every entry, but without the search index, whose trigram work is most of
-- an entry's write (docs/benchmarks.md). A job moves the lane's rows into audit_entries afterwards, in batches, and that
-- move is when their trigram entries are written.
--
-- The lane inherits audit_entries: every reader of the entries (the audit_logs view, lists, searches, counts, exports,
-- the verifier, the retention cut) reads its rows too, with no change to a query, and a search stays exact while rows
-- wait (it reads the organization's waiting rows through the lane's own btree index, without the trigram index).
--
-- A row is sealed once, when it enters the lane: its link, the chain head and the counts per action are written then.
-- The move keeps its pos and id and writes no link and no count; the entries' seal recognizes a move by a row of
-- audit_history_moves for the moving transaction, which only audit_history_move (below) writes, and instead of
-- sealing checks that every moved row is already linked.
CREATE TABLE audit_history_lane () INHERITS (audit_entries);
--> statement-breakpoint
-- A child does not inherit the identity: its positions come from the entries' sequence, as the seal checks.
ALTER TABLE audit_history_lane ALTER pos SET DEFAULT nextval('audit_entries_pos_seq');
--> statement-breakpoint
ALTER TABLE audit_history_lane ADD CONSTRAINT audit_history_lane_pkey PRIMARY KEY (id);
--> statement-breakpoint
ALTER TABLE audit_history_lane ADD CONSTRAINT audit_history_lane_pos_key UNIQUE (pos);
--> statement-breakpoint
CREATE INDEX audit_history_lane_org_time_idx ON audit_history_lane (org_id, timestamp DESC, pos DESC);
--> statement-breakpoint
CREATE INDEX audit_history_lane_anchored_record ON audit_history_lane (org_id) WHERE action = 'system.audit.anchored';
--> statement-breakpoint
CREATE INDEX audit_history_lane_device_lifecycle_idx ON audit_history_lane (org_id, resource_id)
  WHERE action IN ('device.create', 'device.delete');
--> statement-breakpoint
-- A transaction moving lane rows into audit_entries. Written only by audit_history_move, within its transaction (the
-- row is deleted before it returns, so none is ever committed); read by audit_history_moving. No role but the owner
-- may write or read it, so no other statement can pass for a move.
CREATE TABLE audit_history_moves (
  txid bigint PRIMARY KEY
);
--> statement-breakpoint
REVOKE ALL ON audit_history_moves FROM PUBLIC;
--> statement-breakpoint
CREATE FUNCTION audit_history_moving() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT EXISTS (SELECT FROM public.audit_history_moves m WHERE m.txid = txid_current_if_assigned())
$$;
--> statement-breakpoint
-- The entries' seal, skipped for a move; and in its place the check that every moved row was sealed in the lane.
DROP TRIGGER audit_entries_seal ON audit_entries;
--> statement-breakpoint
CREATE TRIGGER audit_entries_seal AFTER INSERT ON audit_entries REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (NOT public.audit_history_moving()) EXECUTE FUNCTION audit_entries_seal();
--> statement-breakpoint
CREATE FUNCTION audit_entries_moved() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT FROM added a WHERE NOT EXISTS (
       SELECT FROM public.audit_chain_links l WHERE l.pos = a.pos AND l.org_id = a.org_id)) THEN
    RAISE EXCEPTION 'only sealed lane rows move into audit_entries' USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_entries_moved AFTER INSERT ON audit_entries REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (public.audit_history_moving()) EXECUTE FUNCTION audit_entries_moved();
--> statement-breakpoint
-- The lane's rows are sealed as they enter it, by the same seal (the same links, heads and counts).
CREATE TRIGGER audit_history_lane_seal AFTER INSERT ON audit_history_lane REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_seal();
--> statement-breakpoint
-- An id is unique over the entries and the lane (each table's key sees only its own rows): a lane row with an entry's
-- id could never move.
CREATE FUNCTION audit_history_lane_unique_ids() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT FROM added a WHERE EXISTS (SELECT FROM ONLY public.audit_entries e WHERE e.id = a.id)) THEN
    RAISE EXCEPTION 'an audit entry with this id exists' USING ERRCODE = 'unique_violation';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_history_lane_unique_ids AFTER INSERT ON audit_history_lane REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION audit_history_lane_unique_ids();
--> statement-breakpoint
CREATE TRIGGER audit_history_lane_refuse_admin_insert AFTER INSERT ON audit_history_lane REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (current_user = 'logbook_audit_admin' OR session_user = 'logbook_audit_admin')
  EXECUTE FUNCTION audit_logs_refuse_admin_insert();
--> statement-breakpoint
-- Append-only like the entries: named directly, the lane takes only the move's deletes. The retention cut names
-- audit_entries, whose triggers see the lane's rows among the deleted (refused unless linked rows go with their links;
-- taken off the counts).
CREATE FUNCTION audit_history_lane_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'DELETE' AND public.audit_history_moving() THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_history_lane_refuse_change BEFORE UPDATE OR DELETE ON audit_history_lane
  FOR EACH STATEMENT EXECUTE FUNCTION audit_history_lane_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_history_lane_refuse_truncate BEFORE TRUNCATE ON audit_history_lane
  FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
-- Moves up to `batch` of the lane's oldest rows (by position) into audit_entries, in one statement: deleted from the
-- lane and inserted into the entries with their pos and id, so their links still name them. One mover at a time (a
-- second answers 0 and that rows wait). Answers how many moved and whether rows still wait.
CREATE FUNCTION audit_history_move(batch integer) RETURNS TABLE (moved integer, waiting boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  IF batch IS NULL OR batch < 1 THEN
    RAISE EXCEPTION 'batch must be at least 1' USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT pg_try_advisory_xact_lock(2, 0) THEN
    RETURN QUERY SELECT 0, true;
    RETURN;
  END IF;
  INSERT INTO public.audit_history_moves (txid) VALUES (txid_current());
  WITH taken AS (
    DELETE FROM ONLY public.audit_history_lane l
     WHERE l.pos IN (SELECT w.pos FROM ONLY public.audit_history_lane w ORDER BY w.pos LIMIT batch)
    RETURNING l.*
  )
  INSERT INTO public.audit_entries OVERRIDING SYSTEM VALUE SELECT * FROM taken;
  GET DIAGNOSTICS n = ROW_COUNT;
  DELETE FROM public.audit_history_moves WHERE txid = txid_current();
  RETURN QUERY SELECT n, EXISTS (SELECT FROM ONLY public.audit_history_lane);
END
$$;
--> statement-breakpoint
-- Which rows an import has brought, by the system they came from and their id there (docs/imports.md "Matching"):
-- a second import of the same row is `unchanged` (same digest) or a `conflict` (another digest), never a second entry.
-- Written in the statement that inserts the rows into the lane; kept when retention cuts the rows, so a row retention
-- has removed is not imported again.
CREATE TABLE audit_import_keys (
  org_id        uuid NOT NULL,
  source_system varchar(50) NOT NULL,
  external_id   varchar(255) NOT NULL,
  digest        char(64) NOT NULL,
  pos           bigint NOT NULL,
  PRIMARY KEY (org_id, source_system, external_id)
);
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_history_moving(), audit_entries_moved(), audit_history_lane_unique_ids(),
  audit_history_lane_refuse_change(), audit_history_move(integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION audit_history_moving(), audit_history_move(integer) TO logbook_app;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION audit_history_moving() TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT, INSERT ON audit_history_lane, audit_import_keys TO logbook_app;
--> statement-breakpoint
GRANT USAGE ON SEQUENCE audit_entries_pos_seq TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON audit_history_lane TO logbook_audit_admin;
