-- The sweep took the oldest committed intents that no other statement was moving (SKIP LOCKED), so it could seal a
-- later intent of an organization while an earlier one was still being sealed: a ticket's `ticket.create` before the
-- `alert.create` its raise was sealing. It now waits for such a seal, in id order as every seal locks its intents
-- (0171: no deadlock between them), and takes the intents the other left, so the chain keeps the intents' order.
CREATE OR REPLACE FUNCTION audit_intents_sweep(after bigint, lim integer)
RETURNS TABLE (sealed_id uuid, sealed_org uuid, sealed_pos bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT s.sealed_id, s.sealed_org, s.sealed_pos
    FROM public.audit_intents_seal((
      SELECT coalesce(jsonb_agg(w.id ORDER BY w.id), '[]'::jsonb) FROM (
        SELECT i.id FROM public.audit_intents i WHERE i.id > after ORDER BY i.id LIMIT lim FOR UPDATE
      ) w
    )) s
$$;
