-- No per-row foreign keys on an automation run's device items and their script links: an occurrence writes one item
-- per device in scope (ten million for a thousand automations over ten thousand devices), and the checks of their six
-- keys took about two fifths of writing them. Every value is the server's own, written in the statement that reads
-- it: an item's run is inserted by the same statement, its device and organization come from the live devices the
-- automation's scope selected, a link's item, script run and script run item from the rows its statement joins.
-- Devices and organizations are only ever soft-deleted, and no run, item or script run is ever deleted.
ALTER TABLE automation_run_items DROP CONSTRAINT automation_run_items_run_id_fkey;
--> statement-breakpoint
ALTER TABLE automation_run_items DROP CONSTRAINT automation_run_items_device_id_fkey;
--> statement-breakpoint
ALTER TABLE automation_run_items DROP CONSTRAINT automation_run_items_org_id_fkey;
--> statement-breakpoint
ALTER TABLE automation_run_scripts DROP CONSTRAINT automation_run_scripts_run_item_id_fkey;
--> statement-breakpoint
ALTER TABLE automation_run_scripts DROP CONSTRAINT automation_run_scripts_script_run_id_fkey;
--> statement-breakpoint
ALTER TABLE automation_run_scripts DROP CONSTRAINT automation_run_scripts_script_run_item_id_fkey;
