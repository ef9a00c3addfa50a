-- The schedule engine (shared/schedules): each occurrence of a scheduled object runs at most once. An occurrence is
-- keyed by its schedule and its local date-time (the wall time its rule names), and each phase of it (a maintenance
-- window's start and end) claims its row here before it acts, so a job delivered twice, or armed twice by a change
-- racing its firing, does its work once.
CREATE TABLE schedule_runs (
  schedule_type   varchar(40) NOT NULL,
  schedule_id     uuid NOT NULL,
  occurrence_key  varchar(19) NOT NULL,
  phase           varchar(20) NOT NULL,
  ran_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (schedule_type, schedule_id, occurrence_key, phase)
);
--> statement-breakpoint
GRANT SELECT, INSERT ON schedule_runs TO logbook_app;
