-- Audit stream delivery without a hot counter on the write path, and without a delivery waiting for a busy cursor
-- (docs/audit-streaming.md "Streams" and "Delivery").
--
-- The logs' ordering keys are numbered by the delivery job, not by the insert: the insert of an organization a
-- destination streams the log to only reads that a head exists and stores its rows with a negative stream_seq
-- (waiting for a key), taking no lock: minus (a ticket of log_stream_order × 2^20 + the row's place in the
-- statement), so the rows waiting keep the order they were stored in. The delivery job takes the head row, numbers
-- the committed rows waiting after it in that order, and moves the head, in one transaction. Concurrent inserts of one
-- organization no longer wait for each other (a sequence takes no row lock). Rows waiting for their key are in the
-- partial index (org_id, stream_seq) already.
CREATE SEQUENCE log_stream_order;
--> statement-breakpoint
GRANT USAGE ON SEQUENCE log_stream_order TO logbook_app;
--> statement-breakpoint
GRANT UPDATE (stream_seq) ON agent_logs, device_event_logs TO logbook_app;
--> statement-breakpoint
-- A delivery that finds the cursor held by another marks it: the holder delivers once more before it lets go, so
-- rows written while it ran never wait for a later job.
ALTER TABLE audit_stream_cursors ADD COLUMN pending boolean NOT NULL DEFAULT false;
