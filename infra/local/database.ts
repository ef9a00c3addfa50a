import { createPgDb } from '#shared/db/pg.ts';
import { migrate } from '#shared/db/migrate.ts';
import { grantRoleLogins, withCredentials } from '#shared/db/roles.ts';

/** Local passwords of the API and retention roles (local servers and tests only; AWS keeps them in Secrets Manager). */
export const localRolePasswords = { app: 'logbook-app-local', auditAdmin: 'logbook-audit-admin-local' };

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
    app: withCredentials(adminUrl, 'logbook_app', localRolePasswords.app),
    auditAdmin: withCredentials(adminUrl, 'logbook_audit_admin', localRolePasswords.auditAdmin),
  };
}

/** Migrates the database at `adminUrl` and gives the API and retention roles their local logins. */
export async function prepareDatabase(adminUrl: string, log?: (line: string) => void): Promise<void> {
  const admin = createPgDb({ connectionString: adminUrl, max: 1, applicationName: 'logbook-migrate' });
  try {
    await migrate(admin, { log });
    await grantRoleLogins(admin, localRolePasswords);
  } finally {
    await admin.close();
  }
}
