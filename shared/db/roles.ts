import type { Db } from './db.ts';

export interface RolePasswords {
  app: string;
  auditAdmin: string;
}

/** The database role behind each login: the API's and the retention worker's. */
export const roleNames: Record<keyof RolePasswords, string> = { app: 'logbook_app', auditAdmin: 'logbook_audit_admin' };

const quoteLiteral = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * Gives the named roles (the API's, the retention worker's) a login with these passwords
 * (locally; in AWS the migration custom resource does it from their secrets).
 */
export async function grantRoleLogins(admin: Db, passwords: Partial<RolePasswords>): Promise<void> {
  for (const [role, password] of Object.entries(passwords) as [keyof RolePasswords, string][]) {
    await admin.query(`ALTER ROLE ${roleNames[role]} LOGIN PASSWORD ${quoteLiteral(password)}`);
  }
}

/** The connection string of `url` with another user and password. */
export function withCredentials(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}
