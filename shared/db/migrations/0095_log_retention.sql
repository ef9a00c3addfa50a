-- Retention of agent diagnostic logs and device event logs per organization (docs/retention.md "Agent and event
-- logs"). No row: the defaults (30 and 90 days, shared/agent-logs/retention.ts), so every organization, old or new,
-- is pruned; a row holds the values an administrator set (PUT /orgs/organizations/{id}/log-retention).
CREATE TABLE log_retention_policies (
  org_id          uuid PRIMARY KEY REFERENCES organizations (id),
  agent_log_days  integer NOT NULL CHECK (agent_log_days BETWEEN 1 AND 3650),
  event_log_days  integer NOT NULL CHECK (event_log_days BETWEEN 1 AND 3650),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  updated_by      uuid
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON log_retention_policies TO logbook_app;
--> statement-breakpoint
-- The daily retention run (logbook_audit_admin) deletes the expired rows; the API's role still only appends them.
GRANT SELECT ON log_retention_policies TO logbook_audit_admin;
--> statement-breakpoint
GRANT SELECT, DELETE ON agent_logs, device_event_logs TO logbook_audit_admin;
--> statement-breakpoint
-- The entries per device and hour (0006) follow the deletions, so a page's total counts only the rows still there.
-- SECURITY DEFINER (owner logbook_owner): the deleting role never writes the counts itself.
CREATE FUNCTION agent_logs_uncount() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  WITH gone AS (
    SELECT r.device_id, date_trunc('hour', r.timestamp, 'UTC') AS hour, r.level, r.component, count(*) AS entries
      FROM removed r
     GROUP BY 1, 2, 3, 4
  ), counted AS (
    UPDATE public.agent_log_counts c SET entries = c.entries - g.entries
      FROM gone g
     WHERE c.device_id = g.device_id AND c.hour = g.hour AND c.level = g.level AND c.component = g.component
    RETURNING c.device_id, c.hour, c.level, c.component, c.entries
  )
  DELETE FROM public.agent_log_counts c
   USING counted n
   WHERE c.device_id = n.device_id AND c.hour = n.hour AND c.level = n.level AND c.component = n.component
     AND n.entries <= 0;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER agent_logs_uncount AFTER DELETE ON agent_logs REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION agent_logs_uncount();
--> statement-breakpoint
REVOKE EXECUTE ON FUNCTION agent_logs_uncount() FROM PUBLIC;
--> statement-breakpoint
-- The retention worker's login writes its own system events only: the audit retention's system.audit.* rows (0008)
-- and now the one summary row per organization and log type it pruned.
CREATE OR REPLACE FUNCTION audit_logs_refuse_admin_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF EXISTS (
    SELECT 1 FROM added a
     WHERE a.actor_type::text <> 'system'
        OR NOT (starts_with(a.action::text, 'system.audit.')
                OR a.action::text IN ('agent_logs.prune', 'device_event_logs.prune'))
  ) THEN
    RAISE EXCEPTION 'logbook_audit_admin writes only its own system events (system.audit.*, agent_logs.prune, device_event_logs.prune) of actorType system'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NULL;
END
$$;
