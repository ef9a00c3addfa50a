-- SECURITY DEFINER functions resolve names in pg_catalog and pg_temp only (functions are never looked up in
-- pg_temp), so nothing created in schema public can stand in for a built-in they call. With public on their
-- search_path, a role allowed to CREATE in public (PUBLIC was, on databases created before PostgreSQL 15 or
-- pg_upgraded from one; 0001_roles.sql now revokes it) could plant, for example, public.convert_to(text, text):
-- a closer match for convert_to(text, 'UTF8') than pg_catalog.convert_to(text, name), run with the owner's
-- rights inside the sealing trigger. Every table and function of ours they use is written public.<name>.

-- Sealing (0003_audit.sql), unchanged but for the search_path and literals typed as the built-in expects
-- ('UTF8'::name, 'hex'::text), so no overload can be preferred for an unknown-typed literal.
CREATE OR REPLACE FUNCTION audit_logs_seal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  fields text;
  latest_seq bigint;
  latest_checksum varchar(128);
BEGIN
  -- Canonical payload v1 (DESIGN.md): 'logbook-audit-v1', then per field '\n' and '~' or '<UTF-8 bytes>:<value>'.
  fields := concat_ws(E'\n'::text,
    public.audit_canonical_field(to_char(NEW.timestamp AT TIME ZONE 'UTC'::text, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'::text)),
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
  IF current_setting('transaction_isolation'::text) <> 'read committed' THEN
    RAISE EXCEPTION 'audit rows are written in READ COMMITTED transactions, not %', current_setting('transaction_isolation'::text)
      USING ERRCODE = 'invalid_transaction_state';
  END IF;
  PERFORM pg_advisory_xact_lock(1, ('x'::text || left(NEW.org_id::text, 8))::bit(32)::integer);
  SELECT l.seq, l.checksum INTO latest_seq, latest_checksum
    FROM (
      SELECT h.seq, h.checksum FROM public.audit_chain_heads h WHERE h.org_id = NEW.org_id
      UNION ALL
      (SELECT a.seq, a.checksum FROM public.audit_logs a WHERE a.org_id = NEW.org_id ORDER BY a.seq DESC LIMIT 1)
    ) l
    ORDER BY l.seq DESC LIMIT 1;
  NEW.seq := coalesce(latest_seq, 0) + 1;
  NEW.prev_checksum := latest_checksum;
  NEW.checksum := encode(sha256(convert_to(concat_ws(E'\n'::text,
    'logbook-audit-v1'::text,
    public.audit_canonical_field(NEW.id::text),
    public.audit_canonical_field(NEW.org_id::text),
    public.audit_canonical_field(NEW.seq::text),
    fields,
    public.audit_canonical_field(NEW.prev_checksum::text)
  ), 'UTF8'::name)), 'hex'::text);
  RETURN NEW;
END
$$;
--> statement-breakpoint
-- Their bodies name only public.<table>, transition tables and built-ins with typed arguments.
ALTER FUNCTION audit_logs_move_heads() SET search_path = pg_catalog, pg_temp;
--> statement-breakpoint
ALTER FUNCTION audit_logs_checkpoint() SET search_path = pg_catalog, pg_temp;
--> statement-breakpoint
-- 0006_agent_logs.sql: the same hole (date_trunc('hour', …, 'UTC') takes unknown-typed literals).
ALTER FUNCTION agent_logs_count() SET search_path = pg_catalog, pg_temp;
