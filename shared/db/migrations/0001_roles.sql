-- Bootstrap: the three database roles of DESIGN.md. This file alone runs as the
-- administrator that connects (it creates roles); every later file runs as logbook_owner.
-- Roles are created without LOGIN; each environment gives them a login and password
-- (shared/db/roles.ts locally, the migration custom resource in AWS).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'logbook_owner') THEN
    CREATE ROLE logbook_owner NOLOGIN;
  END IF;
  -- The API's role: on audit tables it will hold SELECT and INSERT only.
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'logbook_app') THEN
    CREATE ROLE logbook_app NOLOGIN;
  END IF;
  -- The retention worker's role: the only one allowed to delete audit rows (seed 5 rule 8).
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'logbook_audit_admin') THEN
    CREATE ROLE logbook_audit_admin NOLOGIN;
  END IF;
END
$$;
--> statement-breakpoint
-- Every later file runs after SET LOCAL ROLE logbook_owner, so the administrator must be allowed to
-- take that role. A superuser always is; a CREATEROLE administrator (Aurora's master user) is not:
-- since PostgreSQL 16 creating a role gives its creator ADMIN but no SET (createrole_self_grant).
-- INHERIT FALSE: the administrator acts as the owner only after SET ROLE, never by inheritance.
-- EXECUTE, since PostgreSQL 15 cannot parse the WITH SET form.
DO $$
BEGIN
  IF current_user = 'logbook_owner' THEN
    RETURN;
  ELSIF current_setting('server_version_num')::int >= 160000 THEN
    IF NOT pg_has_role(current_user, 'logbook_owner', 'SET') THEN
      EXECUTE 'GRANT logbook_owner TO CURRENT_USER WITH SET TRUE, INHERIT FALSE';
    END IF;
  ELSIF NOT pg_has_role(current_user, 'logbook_owner', 'MEMBER') THEN
    EXECUTE 'GRANT logbook_owner TO CURRENT_USER';
  END IF;
END
$$;
--> statement-breakpoint
-- Nobody but the owner creates objects in public. Databases created before PostgreSQL 15 (or pg_upgraded from
-- one) let PUBLIC create there, and an object planted in public (a function overload, say) could be resolved by a
-- SECURITY DEFINER function in place of the built-in it calls. This file runs as the administrator, who owns the
-- schema (or is a member of pg_database_owner); the owner's own CREATE is granted next.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
--> statement-breakpoint
GRANT USAGE, CREATE ON SCHEMA public TO logbook_owner;
--> statement-breakpoint
GRANT USAGE ON SCHEMA public TO logbook_app, logbook_audit_admin;
--> statement-breakpoint
-- Trusted extensions (pg_trgm, btree_gin) are created by the owner.
DO $$
BEGIN
  EXECUTE format('GRANT CREATE, CONNECT ON DATABASE %I TO logbook_owner', current_database());
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO logbook_app, logbook_audit_admin', current_database());
END
$$;
--> statement-breakpoint
-- The health check reads it as the API's role.
GRANT SELECT ON schema_migrations TO logbook_app;
