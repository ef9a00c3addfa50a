-- Scripts (seed 1, issue 17): a library per organization or per partner (availability `partner`: one copy serves
-- every organization of the partner, including organizations created later), versions, and runs relayed to agents
-- over the live-query channel (shared/scripts).
CREATE TABLE scripts (
  id                          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id                  uuid NOT NULL REFERENCES partners (id),
  -- NULL: availability `partner`.
  org_id                      uuid REFERENCES organizations (id),
  name                        varchar(255) NOT NULL,
  description                 text NOT NULL DEFAULT '',
  language                    varchar(20) NOT NULL CHECK (language IN ('powershell', 'bash', 'python', 'cmd')),
  os_types                    jsonb NOT NULL,
  category                    varchar(100),
  tags                        jsonb NOT NULL DEFAULT '[]',
  run_as                      varchar(20) NOT NULL CHECK (run_as IN ('system', 'user')),
  timeout_seconds             integer NOT NULL CHECK (timeout_seconds BETWEEN 1 AND 86400),
  -- NULL: the default (0 raises nothing, any other code `medium`).
  exit_code_severity_mapping  jsonb,
  version                     integer NOT NULL DEFAULT 1,
  content                     text NOT NULL,
  parameters                  jsonb NOT NULL DEFAULT '[]',
  created_by                  uuid,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  -- Soft delete: runs and the trail keep pointing at the script.
  deleted_at                  timestamptz
);
--> statement-breakpoint
-- One live script of a name per library (an organization's, or the partner's); bundle imports report the conflict.
CREATE UNIQUE INDEX scripts_name_idx ON scripts (partner_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'), lower(name))
  WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Every change of content or parameters makes a new version; runs record the version they ran.
CREATE TABLE script_versions (
  script_id   uuid NOT NULL REFERENCES scripts (id),
  version     integer NOT NULL,
  language    varchar(20) NOT NULL,
  content     text NOT NULL,
  parameters  jsonb NOT NULL,
  created_by  uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (script_id, version)
);
--> statement-breakpoint
CREATE TABLE script_runs (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id       uuid NOT NULL REFERENCES partners (id),
  script_id        uuid NOT NULL REFERENCES scripts (id),
  script_version   integer NOT NULL,
  -- The parameter values with every secret one left out (seed 1: a secret value is never stored in a run record).
  parameters       jsonb NOT NULL,
  timeout_seconds  integer NOT NULL,
  -- Who started the run (actorType, id, email, name, role): the actor of each item's script.execute row.
  started_by       jsonb NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE INDEX script_runs_script_idx ON script_runs (script_id, created_at DESC);
--> statement-breakpoint
-- Secret parameter values of a run, kept apart from the run record only while an item may still be delivered to an
-- agent that connects later; deleted once no item of the run is pending.
CREATE TABLE script_run_secrets (
  run_id  uuid PRIMARY KEY REFERENCES script_runs (id) ON DELETE CASCADE,
  values  jsonb NOT NULL
);
--> statement-breakpoint
CREATE TABLE script_run_items (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  run_id           uuid NOT NULL REFERENCES script_runs (id),
  device_id        uuid NOT NULL REFERENCES devices (id),
  org_id           uuid NOT NULL REFERENCES organizations (id),
  status           varchar(20) NOT NULL CHECK (status IN
                     ('pending', 'sent', 'running', 'completed', 'failed', 'timed-out', 'expired', 'cancelled')),
  -- The connection the item was last sent on.
  connection_id    text,
  -- A pending item expires then (its agent did not connect in time).
  expires_at       timestamptz NOT NULL,
  sent_at          timestamptz,
  started_at       timestamptz,
  -- A sent or running item without an answer by then is timed-out (the script's timeout plus a grace period).
  deadline_at      timestamptz,
  finished_at      timestamptz,
  exit_code        integer,
  duration_ms      integer,
  stdout           text,
  stderr           text,
  stdout_truncated boolean NOT NULL DEFAULT false,
  stderr_truncated boolean NOT NULL DEFAULT false,
  error            jsonb,
  -- How many pieces the agent's answer comes in, from its first chunk.
  chunks           integer CHECK (chunks BETWEEN 1 AND 64),
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, device_id)
);
--> statement-breakpoint
CREATE INDEX script_run_items_run_idx ON script_run_items (run_id, status);
--> statement-breakpoint
CREATE INDEX script_run_items_waiting_idx ON script_run_items (device_id) WHERE status IN ('pending', 'sent');
--> statement-breakpoint
CREATE INDEX script_run_items_deadline_idx ON script_run_items (deadline_at) WHERE status IN ('sent', 'running');
--> statement-breakpoint
CREATE INDEX script_run_items_expiry_idx ON script_run_items (expires_at) WHERE status = 'pending';
--> statement-breakpoint
-- The chunks of a large answer as they arrive ({ runItemId, chunk, chunks, data }), put together once all are in.
CREATE TABLE script_run_item_chunks (
  run_item_id  uuid NOT NULL REFERENCES script_run_items (id) ON DELETE CASCADE,
  chunk        integer NOT NULL CHECK (chunk BETWEEN 0 AND 64),
  data         text NOT NULL,
  PRIMARY KEY (run_item_id, chunk)
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON scripts, script_versions, script_runs, script_run_items TO logbook_app;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON script_run_secrets, script_run_item_chunks TO logbook_app;
