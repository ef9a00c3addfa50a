-- The zones each schedule trigger of each version of an automation is armed in: a zone is armed once per version,
-- when the automation is created or changed, or when a write brings its owner's devices into a zone new to it (a
-- device enrolled, a site's zone changed).
CREATE TABLE automation_zones (
  automation_id  uuid NOT NULL REFERENCES automations (id),
  version        integer NOT NULL,
  trigger        integer NOT NULL,
  zone           varchar(64) NOT NULL,
  armed_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (automation_id, version, trigger, zone)
);
--> statement-breakpoint
GRANT SELECT, INSERT ON automation_zones TO logbook_app;
