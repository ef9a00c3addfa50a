-- Two seals may be handed intents in common: a ticket's numbering seals the `alert.create` intents its tickets follow
-- together with its own `ticket.create` ones, while each raise seals its `alert.create` after its commit. A DELETE
-- takes its rows' locks in whatever order it finds them, so two such seals could each hold an intent the other waits
-- for (a deadlock, and both seals left to the sweep). The seal now locks its intents in id order first: the second of
-- two overlapping seals waits for the first, then finds the intents the first moved gone and seals the rest.
CREATE OR REPLACE FUNCTION audit_intents_seal(ids jsonb)
RETURNS TABLE (sealed_id uuid, sealed_org uuid, sealed_pos bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  WITH locked AS MATERIALIZED (
    SELECT i.id FROM public.audit_intents i
     WHERE i.id IN (SELECT value::bigint FROM jsonb_array_elements_text(ids))
     ORDER BY i.id
       FOR UPDATE
  ),
  taken AS (
    DELETE FROM public.audit_intents i USING locked l WHERE i.id = l.id
    RETURNING i.id, i.entry
  )
  INSERT INTO public.audit_entries (org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                    resource_id, resource_name, details, ip_address, user_agent, result, error_message)
  SELECT r."orgId", coalesce(r.timestamp, now()), r."actorType", r."actorId", r."actorEmail", r.action,
         r."resourceType", r."resourceId", r."resourceName", r.details, r."ipAddress", r."userAgent", r.result,
         r."errorMessage"
    FROM taken t CROSS JOIN LATERAL jsonb_to_record(t.entry) AS r("orgId" uuid, timestamp timestamptz,
         "actorType" public.audit_actor_type, "actorId" uuid, "actorEmail" text, action text, "resourceType" text,
         "resourceId" uuid, "resourceName" text, details jsonb, "ipAddress" text, "userAgent" text, result public.audit_result,
         "errorMessage" text)
   ORDER BY r."orgId", t.id
  RETURNING id, org_id, pos
$$;
