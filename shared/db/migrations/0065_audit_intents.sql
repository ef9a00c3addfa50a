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
GRANT SELECT, INSERT, DELETE ON audit_intents TO logbook_app;
--> statement-breakpoint
-- The sweep takes the intents it seals FOR UPDATE SKIP LOCKED, which asks for the UPDATE privilege on a column; no
-- statement updates an intent.
GRANT UPDATE (created_at) ON audit_intents TO logbook_app;
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
