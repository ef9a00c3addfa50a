-- The seal of 0105_audit_search_document.sql, unchanged but for how it puts each entry's canonical payload together:
-- every value is turned into text once, in a level of its own, and the canonical fields are built from those texts.
--
-- audit_canonical_field is inlined into the seal (0003_audit.sql), and its body names its value three times (is it
-- null, its byte length, the value); over an expression such as details::text or to_char(timestamp) the inlined body
-- evaluated that expression three times per field. The step's query over the same 10,000 history entries, run
-- alternately, took 357-429 ms before and 140-250 ms after (docs/benchmarks.md); the payloads, and so every
-- checksum, are the same bytes (DESIGN.md "Audit chain", canonical payload v1).
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
