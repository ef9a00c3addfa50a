import type { Db } from './db.ts';

export interface RolePasswords {
  app: string;
  auditAdmin: string;
}

const quoteLiteral = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * Gives the API role and the retention role a login with these passwords
 * (locally; in AWS the migration custom resource does it from their secrets).
 */
export async function grantRoleLogins(admin: Db, passwords: RolePasswords): Promise<void> {
  await admin.query(`ALTER ROLE logbook_app LOGIN PASSWORD ${quoteLiteral(passwords.app)}`);
  await admin.query(`ALTER ROLE logbook_audit_admin LOGIN PASSWORD ${quoteLiteral(passwords.auditAdmin)}`);
}

/** The connection string of `url` with another user and password. */
export function withCredentials(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}
