-- The people of a partner who sign in. Partner roles belong to no organization, organization roles to exactly one.
-- An identity provider's token hook (the Cognito pre-token-generation trigger) reads a user's row by e-mail to put
-- the role, the partner and the organization into the user's tokens; a deleted user gets none.
CREATE TABLE users (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  partner_id  uuid NOT NULL REFERENCES partners (id),
  org_id      uuid REFERENCES organizations (id),
  email       varchar(254) NOT NULL CHECK (email LIKE '%_@_%'),
  name        varchar(255),
  role        varchar(32) NOT NULL
              CHECK (role IN ('partner_admin', 'partner_technician', 'org_admin', 'org_technician', 'org_viewer')),
  created_by  uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  deleted_at  timestamptz,
  CONSTRAINT users_role_scope CHECK ((role IN ('partner_admin', 'partner_technician')) = (org_id IS NULL))
);
--> statement-breakpoint
-- One live user per e-mail address, compared case-insensitively: an address signs in as one person.
CREATE UNIQUE INDEX users_live_email ON users (lower(email)) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX users_partner_idx ON users (partner_id, lower(email), id) WHERE deleted_at IS NULL;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE ON users TO logbook_app;
