import { existsSync, readFileSync } from 'node:fs';
import { migrate } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins, type RolePasswords, roleNames, withCredentials } from '#shared/db/roles.ts';

/** The superuser password of an embedded PostgreSQL (infra/local/embedded-postgres.ts). */
export const embeddedPassword = 'logbook-local';

/** Where a running `npm start` keeps its embedded PostgreSQL's port, so the operator tools find it by themselves. */
export const embeddedPortFile = '.data/postgres.port';

/**
 * The port of `npm start`'s embedded PostgreSQL: EMBEDDED_PG_PORT, else the port a running (or crashed) `npm start`
 * wrote to .data/postgres.port, else 54329.
 */
export function devServerPort(): number {
  if (process.env.EMBEDDED_PG_PORT) return Number(process.env.EMBEDDED_PG_PORT);
  const written = existsSync(embeddedPortFile) ? Number(readFileSync(embeddedPortFile, 'utf8').trim()) : Number.NaN;
  return Number.isInteger(written) && written > 0 ? written : 54329;
}

/** Superuser connection string of an embedded PostgreSQL on this port (by default `npm start`'s). */
export const embeddedUrl = (port = devServerPort()) =>
  `postgres://postgres:${embeddedPassword}@127.0.0.1:${port}/postgres`;

/** Local passwords of the API and retention roles (local servers and tests only; AWS keeps them in Secrets Manager). */
export const localRolePasswords: RolePasswords = { app: 'logbook-app-local', auditAdmin: 'logbook-audit-admin-local' };

/** A role with a local login: the API's or the retention worker's. */
export type LocalRole = keyof RolePasswords;

/** Where the environment may give a role's connection instead of having it derived from the administrator's. */
export const roleUrlVariables: Record<LocalRole, string> = {
  app: 'APP_DATABASE_URL',
  auditAdmin: 'AUDIT_ADMIN_DATABASE_URL',
};

export interface DatabaseUrls {
  /** Administrator (migrations, role logins). */
  admin: string;
  /** logbook_app: the API. */
  app: string;
  /** logbook_audit_admin: the retention worker. */
  auditAdmin: string;
}

/** The role connection strings of one database, from its administrator's. */
export function roleUrls(adminUrl: string): DatabaseUrls {
  return {
    admin: adminUrl,
    app: withCredentials(adminUrl, roleNames.app, localRolePasswords.app),
    auditAdmin: withCredentials(adminUrl, roleNames.auditAdmin, localRolePasswords.auditAdmin),
  };
}

/**
 * Migrates the database at `adminUrl` and gives the roles in `logins` (default: both)
 * their local passwords; a role whose connection is configured elsewhere keeps its own.
 */
export async function prepareDatabase(
  adminUrl: string,
  options: { log?: (line: string) => void; logins?: readonly LocalRole[] } = {},
): Promise<void> {
  const { log, logins = ['app', 'auditAdmin'] } = options;
  const admin = createPgDb({ connectionString: adminUrl, max: 1, applicationName: 'logbook-migrate' });
  try {
    await migrate(admin, { log });
    await grantRoleLogins(admin, Object.fromEntries(logins.map((role) => [role, localRolePasswords[role]])));
  } finally {
    await admin.close();
  }
}
