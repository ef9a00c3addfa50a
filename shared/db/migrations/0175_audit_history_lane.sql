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
-- The seal of 0140_audit_seal_texts_once.sql, unchanged but for its first step: a move is recognized and checked
-- instead of sealed (one setting read on every other statement; a function in the trigger's WHEN clause measured 0.1 ms
-- more per single-row statement).
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
  -- A move of the history lane's rows into the entries (audit_history_move, which sets the flag for its statement and
  -- writes its transaction's row of audit_history_moves, which no other role can): the rows were sealed as they
  -- entered the lane, so nothing is sealed again; each must already be linked. The flag alone, which any session can
  -- set, passes for nothing.
  IF current_setting('logbook.audit_history_move'::text, true) = 'on' THEN
    IF NOT EXISTS (SELECT FROM public.audit_history_moves m WHERE m.txid = txid_current()) THEN
      RAISE EXCEPTION 'audit rows move into the entries only through audit_history_move' USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- Each row's link looked up by its position (audit_history_move plans it with index scans only).
    IF (SELECT count(*) FROM added a CROSS JOIN LATERAL (
          SELECT FROM public.audit_chain_links l WHERE l.pos = a.pos AND l.org_id = a.org_id LIMIT 1) l)
       <> (SELECT count(*) FROM added) THEN
      RAISE EXCEPTION 'only sealed lane rows move into audit_entries' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
  END IF;
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
      SELECT t.org_id, t.pos,
             concat_ws(E'\n'::text, 'logbook-audit-v1'::text, public.audit_canonical_field(t.id), public.audit_canonical_field(t.org)) AS lead,
             concat_ws(E'\n'::text,
               public.audit_canonical_field(t.ts),
               public.audit_canonical_field(t.actor_type),
               public.audit_canonical_field(t.actor_id),
               public.audit_canonical_field(t.actor_email),
               public.audit_canonical_field(t.action),
               public.audit_canonical_field(t.resource_type),
               public.audit_canonical_field(t.resource_id),
               public.audit_canonical_field(t.resource_name),
               public.audit_canonical_field(t.details),
               public.audit_canonical_field(t.ip_address),
               public.audit_canonical_field(t.user_agent),
               public.audit_canonical_field(t.result),
               public.audit_canonical_field(t.error_message)) AS fields
        FROM (
          -- Each value as text once (OFFSET 0 keeps this level apart): the field's inlined body names its value three
          -- times, and over a bare column that costs nothing, where over details::text it converted the JSON thrice.
          SELECT a.org_id, a.pos, a.id::text AS id, a.org_id::text AS org,
                 to_char(a.timestamp AT TIME ZONE 'UTC'::text, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'::text) AS ts,
                 a.actor_type::text AS actor_type, a.actor_id::text AS actor_id, a.actor_email::text AS actor_email,
                 a.action::text AS action, a.resource_type::text AS resource_type, a.resource_id::text AS resource_id,
                 a.resource_name::text AS resource_name, a.details::text AS details, a.ip_address::text AS ip_address,
                 a.user_agent, a.result::text AS result, a.error_message
            FROM added a
          OFFSET 0
        ) t
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
-- The lane's rows are sealed as they enter it, by the same seal (the same links, heads and counts).
CREATE TRIGGER audit_history_lane_seal AFTER INSERT ON audit_history_lane REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_seal();
--> statement-breakpoint
-- A lane row may not take an entry's id (each table's key sees only its own rows). The other way round (an entry
-- inserted naming a waiting lane row's id, which no writer of the service does) leaves that lane row in the lane: the
-- move passes over it, and it stays sealed, read and searched there.
-- One probe of the entries' key per row, whatever the statistics say: planned while the entries looked empty (a fresh
-- database, statistics not gathered yet) a scan of the entries per row took an import of 5,000 rows 27 s.
CREATE FUNCTION audit_history_lane_unique_ids() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET enable_seqscan = off
AS $$
BEGIN
  IF EXISTS (SELECT FROM added a CROSS JOIN LATERAL (
       SELECT FROM ONLY public.audit_entries e WHERE e.id = a.id LIMIT 1) e) THEN
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
-- lane and inserted into the entries with their pos and id, so their links still name them (a row whose id an entry
-- has taken stays). One mover at a time, and never beside a retention cut, which takes the same lock (a second mover
-- answers 0 and that rows wait). Answers how many moved and whether rows that can move still wait.
-- Its statements, and the seal's check of the moved rows, read by index whatever the statistics say (a lane filled
-- before its statistics were gathered looks empty to the planner).
CREATE FUNCTION audit_history_move(batch integer) RETURNS TABLE (moved integer, waiting boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET enable_seqscan = off
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
  PERFORM set_config('logbook.audit_history_move', 'on', true);
  WITH taken AS (
    DELETE FROM ONLY public.audit_history_lane l
     WHERE l.pos IN (SELECT w.pos FROM ONLY public.audit_history_lane w
                      WHERE NOT EXISTS (SELECT FROM ONLY public.audit_entries e WHERE e.id = w.id)
                      ORDER BY w.pos LIMIT batch)
    RETURNING l.*
  )
  INSERT INTO public.audit_entries OVERRIDING SYSTEM VALUE SELECT * FROM taken;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('logbook.audit_history_move', '', true);
  DELETE FROM public.audit_history_moves WHERE txid = txid_current();
  RETURN QUERY SELECT n, EXISTS (SELECT FROM ONLY public.audit_history_lane w
                                  WHERE NOT EXISTS (SELECT FROM ONLY public.audit_entries e WHERE e.id = w.id));
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
REVOKE EXECUTE ON FUNCTION audit_history_moving(), audit_history_lane_unique_ids(),
  audit_history_lane_refuse_change(), audit_history_move(integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION audit_history_move(integer) TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT ON audit_history_lane, audit_import_keys TO logbook_app;
--> statement-breakpoint
GRANT USAGE ON SEQUENCE audit_entries_pos_seq TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON audit_history_lane TO logbook_audit_admin;
