-- The audit outbox: a change and its audit rows commit together or not at all. A route that changes data writes the
-- audit rows it owes here, in the change's own transaction; once that transaction has committed, one statement
-- deletes the intents and inserts them into audit_entries, where the chain's trigger seals them as any other entry
-- (grouped per organization, under its lock, only for the length of that statement). The delete and the insert
-- are one statement of one transaction, so an intent becomes exactly one entry whoever moves it: the request that
-- wrote it, or the sweep that seals what a process left behind when it died or lost its database between the
-- change's commit and the seal (docs/audit.md "Atomic audit"). A change that rolls back takes its intents with it.
CREATE TABLE audit_intents (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  org_id      uuid NOT NULL,
  -- The row as audit_entries takes it (shared/audit/store.ts AuditRowInput), its timestamp the instant of the change.
  entry       jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
-- The API's role writes intents and reads them; only the two sealing functions below delete them, each into the trail
-- in the same statement, so the role cannot take back the audit rows of a change it committed.
GRANT SELECT, INSERT ON audit_intents TO logbook_app;
--> statement-breakpoint
-- Stores a change's audit rows (a JSON array of entries) and answers their ids, comma-separated, in the order given.
-- A failure is answered (failure: its SQLSTATE and message), never raised: the exception block is a savepoint of its
-- own, rolled back alone, so writing the audit never fails the change; the caller logs the failure and spools the rows
-- once the change has committed.
CREATE FUNCTION audit_intents_add(entries jsonb, OUT ids text, OUT failure text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  WITH added AS (
    INSERT INTO public.audit_intents (org_id, entry)
    SELECT (e.value->>'orgId')::uuid,
           CASE WHEN e.value->>'timestamp' IS NULL
                THEN jsonb_set(e.value, '{timestamp}', to_jsonb(clock_timestamp())) ELSE e.value END
      FROM jsonb_array_elements(entries) WITH ORDINALITY AS e(value, n)
     ORDER BY e.n
    RETURNING id
  )
  SELECT string_agg(id::text, ',' ORDER BY id) INTO ids FROM added;
EXCEPTION WHEN OTHERS THEN
  failure := SQLSTATE || ': ' || SQLERRM;
END
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_intents_add(jsonb) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION audit_intents_add(jsonb) TO logbook_app;
--> statement-breakpoint
-- Moves intents into the trail: deletes them and inserts their entries in one statement, sealed by the chain's trigger
-- at its end, by organization and then in the order they were written. An intent another statement moved meanwhile
-- is not found, so each becomes one entry; one another statement is moving now is waited for. `ids`: the request's
-- own intents (a JSON array of ids), sealed once its change has committed.
-- SECURITY DEFINER (owner logbook_owner) with a pinned search_path, as the seal itself: the API's role may not delete
-- an intent any other way.
CREATE FUNCTION audit_intents_seal(ids jsonb)
RETURNS TABLE (sealed_id uuid, sealed_org uuid, sealed_pos bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  WITH taken AS (
    DELETE FROM public.audit_intents i WHERE i.id IN (SELECT value::bigint FROM jsonb_array_elements_text(ids))
    RETURNING i.id, i.entry
  )
  INSERT INTO public.audit_entries (org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type,
                                    resource_id, resource_name, details, ip_address, user_agent, result, error_message)
  SELECT r."orgId", coalesce(r.timestamp, now()), r."actorType", r."actorId", r."actorEmail", r.action,
         r."resourceType", r."resourceId", r."resourceName", r.details, r."ipAddress", r."userAgent", r.result,
         r."errorMessage"
    FROM taken t CROSS JOIN LATERAL jsonb_to_record(t.entry) AS r("orgId" uuid, timestamp timestamptz,
         "actorType" public.audit_actor_type, "actorId" uuid, "actorEmail" text, action text, "resourceType" text,
         "resourceId" uuid, "resourceName" text, details jsonb, "ipAddress" text, "userAgent" text,
         result public.audit_result, "errorMessage" text)
   ORDER BY r."orgId", t.id
  RETURNING id, org_id, pos
$$;
--> statement-breakpoint
-- The sweep: seals up to `lim` of the oldest committed intents after `after` that no other statement is moving (those
-- a process left behind when it stopped, or lost its database, between a change's commit and its seal).
CREATE FUNCTION audit_intents_sweep(after bigint, lim integer)
RETURNS TABLE (sealed_id uuid, sealed_org uuid, sealed_pos bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT s.sealed_id, s.sealed_org, s.sealed_pos
    FROM public.audit_intents_seal((
      SELECT coalesce(jsonb_agg(w.id), '[]'::jsonb) FROM (
        SELECT i.id FROM public.audit_intents i WHERE i.id > after ORDER BY i.id LIMIT lim FOR UPDATE SKIP LOCKED
      ) w
    )) s
$$;
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION audit_intents_seal(jsonb), audit_intents_sweep(bigint, integer) FROM PUBLIC;
--> statement-breakpoint
GRANT EXECUTE ON FUNCTION audit_intents_seal(jsonb), audit_intents_sweep(bigint, integer) TO logbook_app;
