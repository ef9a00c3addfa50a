/**
 * The logins of the API's and the retention worker's database roles in AWS, one secret per role.
 * Passwords reach PostgreSQL only as SCRAM-SHA-256 verifiers, which ALTER ROLE stores as they are: no
 * password appears in a statement, so none in the database's logs or in the Data API's requests.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { Db } from '#shared/db/db.ts';
import { grantRoleLogins, roleNames } from '#shared/db/roles.ts';
import { readSecret, writeSecret } from '#shared/secrets-manager.ts';

/** A new random password: 40 characters of base64url (240 bits). */
export function newPassword(): string {
  return randomBytes(30).toString('base64url');
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for an ASCII password (RFC 5802 and 7677, in PostgreSQL's form
 * `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, base64). Passwords here are generated ASCII, which
 * SASLprep leaves as they are.
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const hmac = (text: string) => createHmac('sha256', salted).update(text).digest();
  const storedKey = createHash('sha256').update(hmac('Client Key')).digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${hmac('Server Key').toString('base64')}`;
}

/** Gives logbook_app the login held by its secret (read: the API functions read the same secret). */
export async function setAppLogin(admin: Db, secretArn: string): Promise<void> {
  const { password } = JSON.parse(await readSecret(secretArn)) as { password: string };
  await grantRoleLogins(admin, { app: scramVerifier(password) });
}

/**
 * Gives logbook_audit_admin a new password and writes it into its secret, which this function may write but not
 * read (only the retention worker reads it: no other code may read the audit-admin login). The role's password changes inside a transaction that
 * commits only once the secret holds the new login, so a failed write leaves the old pair intact. Run on every
 * deploy: each deploy rotates the worker's login.
 */
export async function rotateAuditAdminLogin(admin: Db, secretArn: string, password = newPassword()): Promise<void> {
  await admin.transaction(async (tx) => {
    await grantRoleLogins(tx, { auditAdmin: scramVerifier(password) });
    await writeSecret(secretArn, JSON.stringify({ username: roleNames.auditAdmin, password }));
  });
}
