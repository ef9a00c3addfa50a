import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPassword, scramVerifier } from '#functions/migrate/role-logins.ts';
import { localRolePasswords } from '#infra/local/database.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins, withCredentials } from '#shared/db/roles.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

let test: TestDatabase;
const role = `logbook_scram_${process.pid}`;

beforeAll(async () => {
  test = await createTestDatabase();
});
afterAll(async () => {
  await test?.admin.query(`DROP ROLE IF EXISTS ${role}`);
  await test?.close();
});

describe('role logins', () => {
  it('makes new passwords of 40 URL-safe characters, never the same twice', () => {
    const passwords = Array.from({ length: 50 }, () => newPassword());
    for (const password of passwords) expect(password).toMatch(/^[A-Za-z0-9_-]{40}$/);
    expect(new Set(passwords).size).toBe(50);
  });

  it('gives PostgreSQL a SCRAM-SHA-256 verifier it stores as is and logs in with', async () => {
    const password = newPassword();
    const verifier = scramVerifier(password);
    expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
    await test.admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${verifier}'`);
    expect(
      (await test.admin.query('SELECT rolpassword FROM pg_authid WHERE rolname = :role::text', { role })).rows,
    ).toEqual([{ rolpassword: verifier }]);
    const login = (secret: string) =>
      createPgDb({ connectionString: withCredentials(test.urls.admin, role, secret), max: 1 });
    const right = login(password);
    const wrong = login(`${password}x`);
    try {
      expect((await right.query('SELECT current_user AS who')).rows).toEqual([{ who: role }]);
      await expect(wrong.query('SELECT 1')).rejects.toThrow(/password authentication failed/);
    } finally {
      await right.close();
      await wrong.close();
    }
  });

  it('grants the logins of servers starting at once on one cluster, each ALTER ROLE of a role taking its turn', async () => {
    const servers = Array.from({ length: 6 }, () => createPgDb({ connectionString: test.urls.admin, max: 1 }));
    try {
      for (let round = 0; round < 5; round++)
        await Promise.all(servers.map((server) => grantRoleLogins(server, localRolePasswords)));
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });
});
