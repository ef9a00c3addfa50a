import type { Db } from './db.ts';
import { dbTimeouts } from './timeouts.ts';

export interface RolePasswords {
  app: string;
  auditAdmin: string;
}

/** The database role behind each login: the API's and the retention worker's. */
export const roleNames: Record<keyof RolePasswords, string> = { app: 'logbook_app', auditAdmin: 'logbook_audit_admin' };

const quoteLiteral = (value: string) => `'${value.replace(/'/g, "''")}'`;

/**
 * Gives the named roles (the API's, the retention worker's) a login with these passwords
 * (locally; in AWS the migration custom resource does it from their secrets). The API's role gets the statement
 * timeout (DB_STATEMENT_TIMEOUT_MS, shared/db/timeouts.ts) as its default: a session the Data API opens takes no
 * startup option, so this is what bounds a statement outside a transaction there (node-postgres sets its own).
 */
export async function grantRoleLogins(admin: Db, passwords: Partial<RolePasswords>): Promise<void> {
  for (const [role, password] of Object.entries(passwords) as [keyof RolePasswords, string][]) {
    await alterRole(admin, `ALTER ROLE ${roleNames[role]} LOGIN PASSWORD ${quoteLiteral(password)}`);
  }
  if (passwords.app === undefined) return;
  const { statementTimeoutMs } = dbTimeouts();
  await alterRole(
    admin,
    statementTimeoutMs > 0
      ? `ALTER ROLE ${roleNames.app} SET statement_timeout = ${statementTimeoutMs}`
      : `ALTER ROLE ${roleNames.app} RESET statement_timeout`,
  );
}

/**
 * Roles belong to the whole cluster: two ALTER ROLEs of one role at once (two servers or migrators starting on one
 * cluster) fail the later with "tuple concurrently updated". Each sets the same kind of value, so it is run again.
 */
async function alterRole(admin: Db, sql: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(sql);
      return;
    } catch (error) {
      if (attempt >= 10 || !/tuple concurrently updated/i.test((error as Error).message)) throw error;
    }
  }
}

/** The connection string of `url` with another user and password. */
export function withCredentials(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}
