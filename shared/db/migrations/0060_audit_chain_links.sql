-- issue 19: an audit row is two rows. The wide entry (audit_entries: what happened, with its btree and trigram
-- indexes) is written first, without any lock; the narrow link (audit_chain_links: the entry's position in its
-- organization's chain, its checksum and the previous one) is written at the end of the inserting statement, under
-- the organization's advisory lock, by the database. Only the link work (the lock, the head, the hashes, one narrow
-- row and its two btree entries) waits for the organization's other writers; the wide row's ten index entries
-- no longer do. The guarantees of 0003_audit.sql are unchanged: sealed by the database, seq gap-free and set under
-- the lock held to commit (so chain order is commit order), no fork (the primary key of the links), and the same
-- canonical payload v1, so every existing chain verifies as it did. DESIGN.md "Audit chain".
--
-- audit_logs becomes a view of the entries joined to their links, with the columns the table had (plus pos): every
-- reader sees only sealed rows, and SQL written against the table reads the same values.
ALTER TABLE audit_logs RENAME TO audit_logs_v1;
--> statement-breakpoint
-- The wide row. pos is the order of insertion over all organizations (an identity, never reused): it joins the
-- entry to its link, and orders the rows of one instant newest first (the seal takes an organization's rows of a
-- statement in pos order, so within a statement pos and seq rise together).
CREATE TABLE audit_entries (
  pos            bigint GENERATED ALWAYS AS IDENTITY,
  id             uuid NOT NULL DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL,
  timestamp      timestamptz NOT NULL DEFAULT now() CHECK (timestamp >= '0001-01-01 00:00:00+00' AND timestamp < '10000-01-01 00:00:00+00'),
  actor_type     audit_actor_type NOT NULL,
  actor_id       uuid NOT NULL,
  actor_email    varchar(255),
  action         varchar(100) NOT NULL,
  resource_type  varchar(50),
  resource_id    uuid,
  resource_name  varchar(255),
  details        jsonb NOT NULL DEFAULT '{}',
  ip_address     varchar(45),
  user_agent     text,
  result         audit_result NOT NULL DEFAULT 'success',
  error_message  text
);
--> statement-breakpoint
-- The seal of an entry: its place in the organization's chain. Written only by audit_entries_seal below.
CREATE TABLE audit_chain_links (
  org_id         uuid NOT NULL,
  seq            bigint NOT NULL,
  pos            bigint NOT NULL,
  checksum       varchar(128) NOT NULL,
  prev_checksum  varchar(128)
);
--> statement-breakpoint
-- The existing trail, in chain order per organization, so its rows of one instant keep their order.
INSERT INTO audit_entries (pos, id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id,
                           resource_name, details, ip_address, user_agent, result, error_message)
OVERRIDING SYSTEM VALUE
SELECT row_number() OVER (ORDER BY o.org_id, o.seq), o.id, o.org_id, o.timestamp, o.actor_type, o.actor_id, o.actor_email,
       o.action, o.resource_type, o.resource_id, o.resource_name, o.details, o.ip_address, o.user_agent, o.result, o.error_message
  FROM audit_logs_v1 o ORDER BY o.org_id, o.seq;
--> statement-breakpoint
INSERT INTO audit_chain_links (org_id, seq, pos, checksum, prev_checksum)
SELECT o.org_id, o.seq, e.pos, o.checksum, o.prev_checksum
  FROM audit_logs_v1 o JOIN audit_entries e ON e.id = o.id ORDER BY o.org_id, o.seq;
--> statement-breakpoint
SELECT setval(pg_get_serial_sequence('audit_entries', 'pos'), greatest((SELECT max(pos) FROM audit_entries), 1), (SELECT count(*) > 0 FROM audit_entries));
--> statement-breakpoint
DROP TABLE audit_logs_v1;
--> statement-breakpoint
DROP FUNCTION audit_logs_seal();
--> statement-breakpoint
DROP FUNCTION audit_logs_move_heads();
--> statement-breakpoint
ALTER TABLE audit_entries ADD CONSTRAINT audit_entries_pkey PRIMARY KEY (id);
--> statement-breakpoint
-- pos is unique over all organizations (a position reused in another organization would wait for, then fail, the
-- writer that holds it); links find their entries by it.
ALTER TABLE audit_entries ADD CONSTRAINT audit_entries_pos_key UNIQUE (pos);
--> statement-breakpoint
-- Lists are newest first in a stable order (timestamp desc, pos desc), read off this index (0005_audit_search.sql).
CREATE INDEX audit_entries_org_time_idx ON audit_entries (org_id, timestamp DESC, pos DESC);
--> statement-breakpoint
CREATE INDEX audit_entries_action_trgm_idx ON audit_entries USING gin (action gin_trgm_ops);
--> statement-breakpoint
CREATE INDEX audit_entries_actor_email_trgm_idx ON audit_entries USING gin (actor_email gin_trgm_ops);
--> statement-breakpoint
CREATE INDEX audit_entries_actor_name_trgm_idx ON audit_entries USING gin ((details -> 'actor' ->> 'name') gin_trgm_ops);
--> statement-breakpoint
CREATE INDEX audit_entries_resource_type_trgm_idx ON audit_entries USING gin (resource_type gin_trgm_ops);
--> statement-breakpoint
CREATE INDEX audit_entries_resource_name_trgm_idx ON audit_entries USING gin (resource_name gin_trgm_ops);
--> statement-breakpoint
CREATE INDEX audit_entries_details_trgm_idx ON audit_entries USING gin ((details::text) gin_trgm_ops);
--> statement-breakpoint
ALTER INDEX audit_entries_details_trgm_idx ALTER COLUMN 1 SET STATISTICS 1000;
--> statement-breakpoint
CREATE INDEX audit_entries_anchored_record ON audit_entries (org_id) WHERE action = 'system.audit.anchored';
--> statement-breakpoint
-- A fork (two links claiming one position) fails loudly; an entry has one link at most.
ALTER TABLE audit_chain_links ADD CONSTRAINT audit_chain_links_pkey PRIMARY KEY (org_id, seq);
--> statement-breakpoint
ALTER TABLE audit_chain_links ADD CONSTRAINT audit_chain_links_pos_key UNIQUE (pos);
--> statement-breakpoint
-- Every reader's audit_logs: only entries with their link (of the same organization), with the table's columns.
CREATE VIEW audit_logs AS
SELECT e.id, e.org_id, e.timestamp, e.actor_type, e.actor_id, e.actor_email, e.action, e.resource_type, e.resource_id,
       e.resource_name, e.details, e.ip_address, e.user_agent, e.result, e.error_message, l.checksum, l.prev_checksum, l.seq, e.pos
  FROM audit_entries e JOIN audit_chain_links l ON l.pos = e.pos AND l.org_id = e.org_id;
--> statement-breakpoint
-- Sealing (DESIGN.md "Audit chain", seed 6 rule 4), once per inserting statement, after its entries are stored with
-- their indexes. The canonical payloads are put together first; then, organization by organization in id order
-- (so two statements take their locks in one order and cannot deadlock), the organization's transaction-scoped lock
-- is taken, its head read in a fresh snapshot, and each entry gets the next seq, the previous checksum and its own;
-- the links and the moved heads are written in one statement. The lock is held to commit, so the chain order
-- is commit order and the next writer's fresh snapshot sees this head.
--
-- SECURITY DEFINER (owner logbook_owner) with a pinned search_path (0010_audit_search_path.sql): the writer holds
-- no privilege on the links or the heads, and nothing it creates can stand in for what this body names.
CREATE FUNCTION audit_entries_seal() RETURNS trigger
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
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_entries_seal AFTER INSERT ON audit_entries REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_seal();
--> statement-breakpoint
-- seed 5 rule 8: entries and links are append-only but for retention (0003_audit.sql), and say which table refused.
CREATE OR REPLACE FUNCTION audit_logs_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_user = 'logbook_audit_admin' AND session_user = 'logbook_audit_admin'
     AND current_setting('logbook.audit_retention', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
-- Heads, checkpoints and links are written only by the triggers of audit_entries and audit_chain_links (0003_audit.sql).
CREATE OR REPLACE FUNCTION audit_chain_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'audit_chain_heads') THEN
    IF pg_trigger_depth() > 1 THEN
      RETURN NULL;
    END IF;
  END IF;
  RAISE EXCEPTION '% is written only by the audit triggers: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_entries_refuse_change BEFORE UPDATE OR DELETE ON audit_entries FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_entries_refuse_truncate BEFORE TRUNCATE ON audit_entries FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_chain_links_refuse_change BEFORE UPDATE OR DELETE ON audit_chain_links FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_chain_links_refuse_truncate BEFORE TRUNCATE ON audit_chain_links FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
-- Links are inserted only by the sealing trigger (trigger depth 2), never directly, not even by their owner.
CREATE TRIGGER audit_chain_links_refuse_insert BEFORE INSERT ON audit_chain_links FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_refuse_change();
--> statement-breakpoint
-- The logbook_audit_admin login writes only its own system.audit.* events (0008_audit_retention.sql).
CREATE TRIGGER audit_entries_refuse_admin_insert AFTER INSERT ON audit_entries REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (current_user = 'logbook_audit_admin' OR session_user = 'logbook_audit_admin')
  EXECUTE FUNCTION audit_logs_refuse_admin_insert();
--> statement-breakpoint
-- seed 6 retention rule 1, on the links now: a cut deletes only the oldest contiguous links of an organization, and
-- the database records it as a checkpoint (0003_audit.sql).
CREATE OR REPLACE FUNCTION audit_logs_checkpoint() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  cut record;
BEGIN
  FOR cut IN SELECT DISTINCT ON (p.org_id) p.org_id, p.seq, p.checksum FROM pruned p ORDER BY p.org_id, p.seq DESC LOOP
    IF EXISTS (SELECT 1 FROM public.audit_chain_links a WHERE a.org_id = cut.org_id AND a.seq < cut.seq) THEN
      RAISE EXCEPTION 'retention deletes only the oldest contiguous audit rows of an organization (organization %, row %)', cut.org_id, cut.seq
        USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO public.audit_chain_checkpoints (org_id, seq, checksum) VALUES (cut.org_id, cut.seq, cut.checksum);
  END LOOP;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_chain_links_checkpoint AFTER DELETE ON audit_chain_links REFERENCING OLD TABLE AS pruned FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_checkpoint();
--> statement-breakpoint
-- An entry is deleted only with its link (in the same statement or after it): retention never leaves a link
-- pointing at nothing.
CREATE FUNCTION audit_entries_refuse_linked_delete() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM removed r JOIN public.audit_chain_links l ON l.pos = r.pos) THEN
    RAISE EXCEPTION 'retention deletes an audit entry only with its chain link' USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_entries_refuse_linked_delete AFTER DELETE ON audit_entries REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION audit_entries_refuse_linked_delete();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_entries_seal(), audit_entries_refuse_linked_delete() FROM PUBLIC;
--> statement-breakpoint
-- The API's role reads and appends entries, and reads links; the retention worker also deletes both.
GRANT SELECT, INSERT ON audit_entries TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON audit_chain_links, audit_logs TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, DELETE ON audit_entries TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT, DELETE ON audit_chain_links TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT ON audit_logs TO logbook_audit_admin;
