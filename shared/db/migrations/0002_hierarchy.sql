-- The organizational hierarchy (seed 2.1): partner > organization > site > device.
-- Organizations, sites and devices are deleted softly: their audit trail must stay readable.
CREATE TABLE partners (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        varchar(255) NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
CREATE TABLE organizations (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id   uuid NOT NULL REFERENCES partners (id),
  name         varchar(255) NOT NULL,
  external_id  varchar(255),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  deleted_at   timestamptz
);
--> statement-breakpoint
CREATE INDEX organizations_partner_idx ON organizations (partner_id, name) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Each organization needs at least one site (seed 2.1): enforced by the service,
-- which creates the first site with the organization and refuses to delete the last.
CREATE TABLE sites (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  name        varchar(255) NOT NULL,
  timezone    varchar(64),
  address     text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz,
  UNIQUE (id, org_id)
);
--> statement-breakpoint
CREATE INDEX sites_org_idx ON sites (org_id, created_at) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- A device belongs to a site of its own organization: the composite key makes a
-- device whose site lies in another organization impossible.
CREATE TABLE devices (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL REFERENCES organizations (id),
  site_id        uuid NOT NULL,
  hostname       varchar(255) NOT NULL,
  display_name   varchar(255),
  os_type        varchar(50),
  os_version     varchar(255),
  agent_version  varchar(50),
  last_seen_at   timestamptz,
  last_ip        varchar(45),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  deleted_at     timestamptz,
  FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id)
);
--> statement-breakpoint
CREATE INDEX devices_org_idx ON devices (org_id, hostname) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX devices_site_idx ON devices (site_id) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- The agent on a device; /agents/:id names it. Its bearer token is stored as a SHA-256 hash.
CREATE TABLE agents (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  device_id   uuid NOT NULL UNIQUE REFERENCES devices (id),
  token_hash  char(64) NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
--> statement-breakpoint
-- Enrollment keys are per organization or per site (seed 1); stored as SHA-256 hashes.
CREATE TABLE enrollment_keys (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL REFERENCES organizations (id),
  site_id     uuid,
  name        varchar(255),
  key_hash    char(64) NOT NULL UNIQUE,
  key_prefix  varchar(12) NOT NULL,
  expires_at  timestamptz,
  revoked_at  timestamptz,
  created_by  uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id)
);
--> statement-breakpoint
CREATE INDEX enrollment_keys_org_idx ON enrollment_keys (org_id, created_at);
--> statement-breakpoint
-- Organization API keys (prefix lbk_), stored as SHA-256 hashes; actorType api_key.
CREATE TABLE api_keys (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL REFERENCES organizations (id),
  name         varchar(255) NOT NULL,
  role         varchar(32) NOT NULL CHECK (role IN ('org_admin', 'org_technician', 'org_viewer')),
  key_prefix   varchar(12) NOT NULL,
  secret_hash  char(64) NOT NULL UNIQUE,
  created_by   uuid,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
--> statement-breakpoint
CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON partners, organizations, sites, devices, agents, enrollment_keys, api_keys TO logbook_app;
--> statement-breakpoint
GRANT SELECT ON organizations TO logbook_audit_admin;
