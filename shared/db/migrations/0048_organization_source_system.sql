-- Tenancy-tree import (issue 18): an organization is linked to the other RMM's customer by (sourceSystem,
-- externalId), unique within its partner among live organizations, so a re-import matches instead of duplicating.
ALTER TABLE organizations ADD COLUMN source_system varchar(100);
--> statement-breakpoint
CREATE UNIQUE INDEX organizations_external_idx ON organizations (partner_id, source_system, external_id)
  WHERE source_system IS NOT NULL AND external_id IS NOT NULL AND deleted_at IS NULL;
