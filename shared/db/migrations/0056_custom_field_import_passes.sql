-- A values import sent as several requests (the wizard's chunks) is one pass (issue 16): each request records its
-- part here, and the request that completes the file writes the pass's one summary audit row and closes it.
CREATE TABLE custom_field_import_passes (
  id             uuid PRIMARY KEY,
  partner_id     uuid NOT NULL REFERENCES partners (id),
  org_id         uuid REFERENCES organizations (id),
  source_system  varchar(100) NOT NULL,
  file_name      varchar(255),
  file_sha256    char(64) NOT NULL,
  file_rows      integer NOT NULL CHECK (file_rows > 0),
  -- firstRow (text) → { rows, sha256, set, summary } of each part committed.
  parts          jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at     timestamptz NOT NULL DEFAULT now(),
  closed_at      timestamptz
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON custom_field_import_passes TO logbook_app;
