-- Enrollment reconciliation (issue 18): each upload of the other RMM's device list for an organization, with its
-- per-device states and their counts, kept so progress reads again later and compares wave by wave.
CREATE TABLE enrollment_reconciliations (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  created_at  timestamptz NOT NULL DEFAULT now(),
  created_by  uuid,
  rows        integer NOT NULL,
  enrolled    integer NOT NULL,
  missing     integer NOT NULL,
  extra       integer NOT NULL,
  ambiguous   integer NOT NULL,
  devices     jsonb NOT NULL CHECK (jsonb_typeof(devices) = 'array')
);
--> statement-breakpoint
CREATE INDEX enrollment_reconciliations_org_idx ON enrollment_reconciliations (org_id, created_at DESC, id);
--> statement-breakpoint
GRANT SELECT, INSERT ON enrollment_reconciliations TO logbook_app;
