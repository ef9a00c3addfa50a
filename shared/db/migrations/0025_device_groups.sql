-- Device groups (seed 2.1; issue 15): static groups hold members added by id, dynamic groups hold a filter over
-- device attributes (shared/device-groups/filter.ts) that the database evaluates at each read, so a dynamic group's
-- membership is never copied. A group belongs to one organization, optionally narrowed to one of its sites.
-- Groups are deleted for good: the audit trail keeps what they were (device_group.delete with the group's fields).
ALTER TABLE devices ADD CONSTRAINT devices_id_org_key UNIQUE (id, org_id);
--> statement-breakpoint
CREATE TABLE device_groups (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id         uuid NOT NULL REFERENCES organizations (id),
  site_id        uuid,
  parent_id      uuid,
  name           varchar(255) NOT NULL,
  type           varchar(16) NOT NULL CHECK (type IN ('static', 'dynamic')),
  filter         jsonb,
  -- Saved filters imported from another RMM (seed 2.1) keep their key there: re-imports match on it.
  source_system  varchar(100),
  external_id    varchar(255),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (id, org_id),
  -- The site and the parent group are the same organization's: no group points into another tenant.
  FOREIGN KEY (site_id, org_id) REFERENCES sites (id, org_id),
  -- Deleting a parent leaves its children at the top level (only parent_id is cleared).
  FOREIGN KEY (parent_id, org_id) REFERENCES device_groups (id, org_id) ON DELETE SET NULL (parent_id),
  CHECK ((type = 'dynamic') = (filter IS NOT NULL)),
  CHECK ((source_system IS NULL) = (external_id IS NULL)),
  CHECK (parent_id IS DISTINCT FROM id)
);
--> statement-breakpoint
-- Names are unique per organization, ignoring case (a duplicate is 409 CONFLICT).
CREATE UNIQUE INDEX device_groups_name_idx ON device_groups (org_id, lower(name));
--> statement-breakpoint
CREATE UNIQUE INDEX device_groups_external_idx ON device_groups (org_id, source_system, external_id)
  WHERE external_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX device_groups_parent_idx ON device_groups (parent_id) WHERE parent_id IS NOT NULL;
--> statement-breakpoint
-- Members of static groups. The composite keys make a member of another organization impossible.
CREATE TABLE device_group_members (
  group_id   uuid NOT NULL,
  org_id     uuid NOT NULL,
  device_id  uuid NOT NULL,
  added_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, device_id),
  FOREIGN KEY (group_id, org_id) REFERENCES device_groups (id, org_id) ON DELETE CASCADE,
  FOREIGN KEY (device_id, org_id) REFERENCES devices (id, org_id)
);
--> statement-breakpoint
CREATE INDEX device_group_members_device_idx ON device_group_members (device_id);
--> statement-breakpoint
CREATE INDEX device_group_members_added_idx ON device_group_members (group_id, added_at DESC);
--> statement-breakpoint
-- A deleted device leaves every static group (issue 15), whichever path deletes it.
CREATE FUNCTION device_group_members_forget_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM device_group_members WHERE device_id = NEW.id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER devices_leave_groups AFTER UPDATE OF deleted_at ON devices
  FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION device_group_members_forget_deleted();
--> statement-breakpoint
-- Dynamic members are read newest first (created_at) or by hostname (devices_org_idx, 0002) within one organization.
CREATE INDEX devices_org_created_idx ON devices (org_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
--> statement-breakpoint
-- Counting a filter's matches visits every device the filter does not rule out by index: the operating system
-- (compared ignoring case, as text conditions are: filter.ts) and the last-seen time (lastSeenAt, online) are the
-- conditions saved filters use most, and the planner combines these two indexes (bench:groups, README).
CREATE INDEX devices_org_os_type_idx ON devices (org_id, lower(os_type)) WHERE deleted_at IS NULL;
--> statement-breakpoint
CREATE INDEX devices_org_last_seen_idx ON devices (org_id, last_seen_at) WHERE deleted_at IS NULL;
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON device_groups, device_group_members TO logbook_app;
