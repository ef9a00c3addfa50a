-- Platform audit log (seed 2.2) sealed into a per-organization SHA-256 hash chain
-- (seed 6 rule 4, DESIGN.md "Audit chain") and append-only (seed 5 rule 8).
--
-- Advisory lock key space of the project (keep it collision-free when adding locks):
--   single bigint key 7204381911 ........ the migrator (shared/db/migrate.ts)
--   two-int key (1, <first 32 bits of the organization id>) ... the audit chain of that organization
-- The two forms never collide with each other (PostgreSQL keeps them apart). Taking the
-- organization's leading 32 bits (not a hash) means a batch whose rows are sorted by org_id
-- takes its locks in key order, so sorted multi-organization batches cannot deadlock even when
-- two organizations share a key (they then merely share a lock).

-- The canonical payload's byte lengths are UTF-8 byte lengths: octet_length() counts them only in a UTF8 database.
DO $$
BEGIN
  IF pg_encoding_to_char((SELECT encoding FROM pg_database WHERE datname = current_database())) <> 'UTF8' THEN
    RAISE EXCEPTION 'the audit chain needs a UTF8 database, not %', pg_encoding_to_char((SELECT encoding FROM pg_database WHERE datname = current_database()));
  END IF;
END
$$;
--> statement-breakpoint
CREATE TYPE audit_actor_type AS ENUM ('user', 'api_key', 'agent', 'system', 'ai_agent');
--> statement-breakpoint
CREATE TYPE audit_result AS ENUM ('success', 'failure', 'denied');
--> statement-breakpoint
-- No foreign key at all: the trail outlives what it describes (an ON DELETE CASCADE from
-- organizations or devices would erase it), organizations are only soft-deleted, and a
-- plain FK would only add a lookup to every sealed insert.
CREATE TABLE audit_logs (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL,
  -- seed 2.2: defaults to now; an explicit (late or imported) time is kept, the chain order stays seq.
  -- A four-digit AD year keeps the canonical timestamp 'YYYY-MM-DDTHH:MM:SS.ffffffZ' unambiguous.
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
  error_message  text,
  checksum       varchar(128) NOT NULL,
  prev_checksum  varchar(128),
  -- Position in the organization's chain, 1 for its first row; set by the sealing trigger only.
  seq            bigint NOT NULL,
  -- DESIGN.md "Audit chain": a fork (two rows claiming one position) fails loudly.
  CONSTRAINT audit_logs_chain_key UNIQUE (org_id, seq)
);
--> statement-breakpoint
-- Lists are newest first in a stable order (timestamp desc, seq desc).
CREATE INDEX audit_logs_org_time_idx ON audit_logs (org_id, timestamp DESC, seq DESC);
--> statement-breakpoint
-- The latest sealed row of each organization; moved only by the sealing triggers.
CREATE TABLE audit_chain_heads (
  org_id      uuid PRIMARY KEY,
  seq         bigint NOT NULL,
  checksum    varchar(128) NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- DESIGN.md "Audit chain": each retention cut records its last deleted row, so the earliest
-- retained row's link is checked against it. Written by the database when retention deletes.
CREATE TABLE audit_chain_checkpoints (
  org_id      uuid NOT NULL,
  seq         bigint NOT NULL,
  checksum    varchar(128) NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, seq)
);
--> statement-breakpoint
-- One field of the canonical payload v1 (DESIGN.md "Audit chain"): '~' for null, else '<UTF-8 byte length>:<value>'.
-- Its body is immutable (int::text || text, not the stable int || text), so the planner inlines it
-- into the sealing trigger instead of calling a SQL function per field (measured 1.7 times as fast).
CREATE FUNCTION audit_canonical_field(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN value IS NULL THEN '~' ELSE octet_length(value)::text || ':' || value END;
--> statement-breakpoint
-- Sealing (DESIGN.md "Audit chain", seed 6 rule 4). Runs before each inserted row, under the
-- organization's transaction-scoped advisory lock, so the chain order is commit order.
--
-- The previous link is the latest of: the head (moved once per statement by audit_logs_move_heads)
-- and the organization's newest row above it (rows sealed earlier in this same statement, visible to
-- a BEFORE ROW trigger). Both are unique-index probes on tables the writer cannot write, so no
-- per-transaction cache exists that a writer could forge (a set_config() cache could be set by any
-- client) or that a skipped row (ON CONFLICT DO NOTHING, a rolled-back savepoint) could desynchronize.
-- Updating the head per row instead leaves a dead head version per row inside the locked section:
-- measured 1.2 to 1.7 times the server time per row for 100- and 1000-row statements, and a third
-- fewer rows/s for 8 concurrent 100-row writers of one organization. The payload fields that do not
-- depend on the chain are joined before the lock is taken, so those writers wait for less.
--
-- SECURITY DEFINER (owner logbook_owner) with a pinned search_path: the writer needs no privilege on
-- audit_chain_heads, and none of its session objects (a temp table or type named like ours) can be
-- resolved in place of ours. Client-supplied seq, checksum and prev_checksum are overwritten.
CREATE FUNCTION audit_logs_seal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  fields text;
  latest_seq bigint;
  latest_checksum varchar(128);
BEGIN
  -- Canonical payload v1 (DESIGN.md): 'logbook-audit-v1', then per field '\n' and '~' or '<UTF-8 bytes>:<value>'.
  fields := concat_ws(E'\n',
    public.audit_canonical_field(to_char(NEW.timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
    public.audit_canonical_field(NEW.actor_type::text),
    public.audit_canonical_field(NEW.actor_id::text),
    public.audit_canonical_field(NEW.actor_email::text),
    public.audit_canonical_field(NEW.action::text),
    public.audit_canonical_field(NEW.resource_type::text),
    public.audit_canonical_field(NEW.resource_id::text),
    public.audit_canonical_field(NEW.resource_name::text),
    public.audit_canonical_field(NEW.details::text),
    public.audit_canonical_field(NEW.ip_address::text),
    public.audit_canonical_field(NEW.user_agent),
    public.audit_canonical_field(NEW.result::text),
    public.audit_canonical_field(NEW.error_message));
  -- Only a fresh snapshot taken after the lock sees the previous writer's head; a REPEATABLE READ
  -- snapshot would predate it and fork the chain under load, so it is refused outright.
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'audit rows are written in READ COMMITTED transactions, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'invalid_transaction_state';
  END IF;
  PERFORM pg_advisory_xact_lock(1, ('x' || left(NEW.org_id::text, 8))::bit(32)::integer);
  SELECT l.seq, l.checksum INTO latest_seq, latest_checksum
    FROM (
      SELECT h.seq, h.checksum FROM public.audit_chain_heads h WHERE h.org_id = NEW.org_id
      UNION ALL
      (SELECT a.seq, a.checksum FROM public.audit_logs a WHERE a.org_id = NEW.org_id ORDER BY a.seq DESC LIMIT 1)
    ) l
    ORDER BY l.seq DESC LIMIT 1;
  NEW.seq := coalesce(latest_seq, 0) + 1;
  NEW.prev_checksum := latest_checksum;
  NEW.checksum := encode(sha256(convert_to(concat_ws(E'\n',
    'logbook-audit-v1',
    public.audit_canonical_field(NEW.id::text),
    public.audit_canonical_field(NEW.org_id::text),
    public.audit_canonical_field(NEW.seq::text),
    fields,
    public.audit_canonical_field(NEW.prev_checksum::text)
  ), 'UTF8')), 'hex');
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_logs_seal BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION audit_logs_seal();
--> statement-breakpoint
-- Moves each organization's head to its last row of the statement, once per statement.
CREATE FUNCTION audit_logs_move_heads() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
  INSERT INTO public.audit_chain_heads AS h (org_id, seq, checksum, updated_at)
  SELECT DISTINCT ON (s.org_id) s.org_id, s.seq, s.checksum, now() FROM sealed s ORDER BY s.org_id, s.seq DESC
  ON CONFLICT (org_id) DO UPDATE SET seq = excluded.seq, checksum = excluded.checksum, updated_at = excluded.updated_at;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_logs_move_heads AFTER INSERT ON audit_logs REFERENCING NEW TABLE AS sealed FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_move_heads();
--> statement-breakpoint
-- seed 5 rule 8: audit rows are append-only. The one exception is retention: DELETE by the
-- retention worker's own login (session_user, so a member of the role cannot SET ROLE into it)
-- with the session flag logbook.audit_retention = 'on' (SET LOCAL).
CREATE FUNCTION audit_logs_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_user = 'logbook_audit_admin' AND session_user = 'logbook_audit_admin'
     AND current_setting('logbook.audit_retention', true) = 'on' THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION 'audit_logs is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_logs_refuse_change BEFORE UPDATE OR DELETE ON audit_logs FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_logs_refuse_truncate BEFORE TRUNCATE ON audit_logs FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_refuse_change();
--> statement-breakpoint
-- seed 6 retention rule 1: a deletion may only cut the oldest contiguous rows of each organization;
-- the cut is recorded as a checkpoint by the database itself, so the verifier can tell a pruned
-- prefix from a deleted one (DESIGN.md "Audit chain").
CREATE FUNCTION audit_logs_checkpoint() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
  cut record;
BEGIN
  FOR cut IN SELECT DISTINCT ON (p.org_id) p.org_id, p.seq, p.checksum FROM pruned p ORDER BY p.org_id, p.seq DESC LOOP
    IF EXISTS (SELECT 1 FROM public.audit_logs a WHERE a.org_id = cut.org_id AND a.seq < cut.seq) THEN
      RAISE EXCEPTION 'retention deletes only the oldest contiguous audit rows of an organization (organization %, row %)', cut.org_id, cut.seq
        USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO public.audit_chain_checkpoints (org_id, seq, checksum) VALUES (cut.org_id, cut.seq, cut.checksum);
  END LOOP;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_logs_checkpoint AFTER DELETE ON audit_logs REFERENCING OLD TABLE AS pruned FOR EACH STATEMENT EXECUTE FUNCTION audit_logs_checkpoint();
--> statement-breakpoint
-- Heads and checkpoints are written only by the audit_logs triggers above (trigger depth 2), never
-- directly, not even by their owner; checkpoints are never updated, and neither is ever deleted.
CREATE FUNCTION audit_chain_refuse_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'audit_chain_heads') THEN
    IF pg_trigger_depth() > 1 THEN
      RETURN NULL;
    END IF;
  END IF;
  RAISE EXCEPTION '% is written only by the audit_logs triggers: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
--> statement-breakpoint
CREATE TRIGGER audit_chain_heads_refuse_change BEFORE INSERT OR UPDATE OR DELETE ON audit_chain_heads FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_chain_heads_refuse_truncate BEFORE TRUNCATE ON audit_chain_heads FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_chain_checkpoints_refuse_change BEFORE INSERT OR UPDATE OR DELETE ON audit_chain_checkpoints FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_refuse_change();
--> statement-breakpoint
CREATE TRIGGER audit_chain_checkpoints_refuse_truncate BEFORE TRUNCATE ON audit_chain_checkpoints FOR EACH STATEMENT EXECUTE FUNCTION audit_chain_refuse_change();
--> statement-breakpoint
-- Trigger functions run without an EXECUTE check; nobody needs to call them directly.
REVOKE EXECUTE ON FUNCTION audit_logs_seal(), audit_logs_move_heads(), audit_logs_checkpoint(), audit_logs_refuse_change(), audit_chain_refuse_change() FROM PUBLIC;
--> statement-breakpoint
-- seed 5 rule 8: the API's role may only read and append; the verifier reads heads and checkpoints.
GRANT SELECT, INSERT ON audit_logs TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON audit_chain_heads, audit_chain_checkpoints TO logbook_app;
--> statement-breakpoint
-- The retention worker deletes (prefix cuts, flag set) and reads; its checkpoints are written by the trigger.
GRANT SELECT, DELETE ON audit_logs TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT ON audit_chain_heads, audit_chain_checkpoints TO logbook_audit_admin;
