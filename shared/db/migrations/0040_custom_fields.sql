-- Custom fields (seed 2.8, issue 16; README "Custom fields"). A definition is owned by one organization or, with
-- org_id NULL, by every organization of its partner (partner-wide). Scope is `device` only for now; the column is
-- there so organization or site scope can follow without reshaping the table.
CREATE TABLE custom_field_definitions (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id       uuid NOT NULL REFERENCES partners (id),
  org_id           uuid REFERENCES organizations (id),
  scope            varchar(20) NOT NULL DEFAULT 'device' CHECK (scope IN ('device')),
  key              varchar(64) NOT NULL CHECK (key ~ '^[a-z][a-z0-9_]*$'),
  name             varchar(100) NOT NULL,
  type             varchar(20) NOT NULL
                   CHECK (type IN ('text', 'number', 'boolean', 'date', 'dropdown', 'multi-select', 'url')),
  choices          jsonb CHECK (choices IS NULL OR jsonb_typeof(choices) = 'array'),
  min              double precision,
  max              double precision,
  required         boolean NOT NULL DEFAULT false,
  default_value    jsonb,
  description      text,
  os_types         jsonb CHECK (os_types IS NULL OR jsonb_typeof(os_types) = 'array'),
  script_writable  boolean NOT NULL DEFAULT false,
  source_system    varchar(100),
  external_id      varchar(255),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((source_system IS NULL) = (external_id IS NULL))
);
--> statement-breakpoint
-- One key is one definition per owner; the rule across owners (an organization field may not take the key of a
-- partner-wide one, nor the other way round) is checked under the partner's lock (shared/custom-fields/definitions.ts).
CREATE UNIQUE INDEX custom_field_definitions_partner_key_idx ON custom_field_definitions (partner_id, key)
  WHERE org_id IS NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX custom_field_definitions_org_key_idx ON custom_field_definitions (org_id, key)
  WHERE org_id IS NOT NULL;
--> statement-breakpoint
-- Values live in their own rows per (device, definition), never in a JSON blob on the device (issue 16).
CREATE TABLE device_custom_field_values (
  device_id   uuid NOT NULL REFERENCES devices (id),
  field_id    uuid NOT NULL REFERENCES custom_field_definitions (id),
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (device_id, field_id)
);
--> statement-breakpoint
-- GET /devices?cf.<key>=<value> reads the devices holding a value off this index (value as text, a scalar's text
-- form; multi-select arrays match through the GIN index below).
CREATE INDEX device_custom_field_values_text_idx ON device_custom_field_values (field_id, (value #>> '{}'));
--> statement-breakpoint
CREATE INDEX device_custom_field_values_array_idx ON device_custom_field_values USING gin (value jsonb_path_ops)
  WHERE jsonb_typeof(value) = 'array';
--> statement-breakpoint
-- The other RMM's device id of a device, kept from an earlier values import: the first way a row finds its device.
CREATE TABLE custom_field_device_mappings (
  partner_id     uuid NOT NULL REFERENCES partners (id),
  source_system  varchar(100) NOT NULL,
  external_id    varchar(255) NOT NULL,
  device_id      uuid NOT NULL REFERENCES devices (id),
  PRIMARY KEY (partner_id, source_system, external_id)
);
--> statement-breakpoint
-- Agents report a serial number at enrollment and heartbeat; imports resolve devices by it (junk serials are never stored).
ALTER TABLE devices ADD COLUMN serial_number varchar(255);
--> statement-breakpoint
CREATE INDEX devices_serial_number_idx ON devices (lower(serial_number)) WHERE serial_number IS NOT NULL;
--> statement-breakpoint
CREATE INDEX devices_org_hostname_lower_idx ON devices (org_id, lower(hostname));
--> statement-breakpoint
-- Scripts write custom fields through the agent route, charged to their own hourly budget (shared/agents/ingest-budget.ts).
ALTER TABLE agent_ingest_usage DROP CONSTRAINT agent_ingest_usage_kind_check;
--> statement-breakpoint
ALTER TABLE agent_ingest_usage ADD CONSTRAINT agent_ingest_usage_kind_check
  CHECK (kind IN ('logs', 'events', 'fields'));
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON custom_field_definitions, device_custom_field_values,
  custom_field_device_mappings TO logbook_app;
