/**
 * The owner's login is RDS-managed (infra/aws/database.ts, ManageMasterUserPassword): RDS rotates the password and
 * the secret together, and the migration passes the secret's ARN to the Data API, which reads the current value on
 * every call. Here a login rotates the same way (the role's password and its secret, through the local Data API
 * and the real SDK client), and the migration authenticates before and after.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DataApiSecret, type RunningDataApiServer, startDataApiServer } from '#infra/local/data-api-server.ts';
import { createDataApiDb } from '#shared/db/data-api.ts';
import { migrate } from '#shared/db/migrate.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import { testClusterArn } from '#test/support/data-api.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

const ownerSecretArn = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!cluster-rotating-AbCdEf';
const role = `rotating_owner_${randomBytes(4).toString('hex')}`;
let test: TestDatabase;
let server: RunningDataApiServer;
const secrets: Record<string, DataApiSecret> = {};

/** Ends the login's sessions: the next call has to log in again, with whatever its secret holds then. */
async function endSessions(): Promise<void> {
  await test.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :role::text', {
    role,
  });
  // pg_terminate_backend only signals: wait until the sessions are gone.
  for (;;) {
    const { rows } = await test.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = :role::text',
      { role },
    );
    if (rows[0]!.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What RDS does on a rotation: a new password on the login and in its secret, together. */
async function rotate(): Promise<void> {
  const password = randomBytes(24).toString('base64url');
  await test.admin.query(`ALTER ROLE ${role} PASSWORD '${password}'`);
  secrets[ownerSecretArn] = { username: role, password };
  await endSessions();
}

const owner = () =>
  createDataApiDb({
    client: createRdsDataClient({ endpoint: server.url }),
    resourceArn: testClusterArn,
    secretArn: ownerSecretArn,
    database: test.name,
    continueAfterTimeout: true,
  });

beforeAll(async () => {
  test = await createTestDatabase();
  // The cluster administrator of the test: may do what the migration does.
  await test.admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER`);
  await rotate();
  server = await startDataApiServer({ serverUrl: test.urls.admin, resourceArn: testClusterArn, secrets });
});

afterAll(async () => {
  await server?.close();
  await test?.admin.query(`DROP ROLE IF EXISTS ${role}`);
  await test?.close();
});

describe("the owner's login rotated as RDS rotates it", () => {
  it('still lets the migration authenticate through the Data API, and the old password no longer works', async () => {
    const before = owner();
    try {
      expect(await migrate(before)).toEqual([]);
      const stale = { ...secrets[ownerSecretArn]! };
      await rotate();
      expect(await migrate(before)).toEqual([]);
      expect((await before.query<{ user: string }>('SELECT current_user AS "user"')).rows).toEqual([{ user: role }]);
      secrets[ownerSecretArn] = stale;
      await endSessions();
      await expect(before.query('SELECT 1')).rejects.toThrow(/password authentication failed/);
    } finally {
      await before.close();
    }
  });
});
