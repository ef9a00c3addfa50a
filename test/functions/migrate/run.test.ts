/**
 * The migration custom resource (functions/migrate/run.ts) as CloudFormation runs it: through the Data API (the local
 * endpoint) as the owner, with the app login read from Secrets Manager and the audit-admin login written into it
 * (a local stand-in that, like IAM in the stack, lets the function read the app secret and only write the
 * audit-admin one), answering at ResponseURL.
 */
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationHandler } from '#functions/migrate/run.ts';
import { localRolePasswords } from '#infra/local/database.ts';
import { loadMigrations } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { withCredentials } from '#shared/db/roles.ts';
import { type Stubs, startStubs } from '#test/support/aws-stubs.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { databaseName } from '#test/support/global-setup.ts';

let test: TestDatabase;
let local: LocalDataApi;
let stubs: Stubs;
let fresh: string;
const appSecret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:app-AbCdEf';
const auditAdminSecret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:audit-admin-AbCdEf';
const saved = { ...process.env };

// The roles are the test cluster's, shared by every test file: the audit-admin login is "rotated" to the password it has.
const handler = migrationHandler({ newPassword: () => localRolePasswords.auditAdmin });

beforeAll(async () => {
  test = await createTestDatabase();
  local = await startLocalDataApi(test);
  fresh = `${test.name}_cfn`;
  await test.admin.query(`CREATE DATABASE ${fresh}`);
  stubs = await startStubs(
    {
      [appSecret]: JSON.stringify({ username: 'logbook_app', password: localRolePasswords.app }),
      [auditAdminSecret]: JSON.stringify({ username: 'logbook_audit_admin', password: 'placeholder' }),
    },
    { [appSecret]: ['GetSecretValue'], [auditAdminSecret]: ['PutSecretValue'] },
  );
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_RDS_DATA: local.server.url,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: stubs.secretsManagerUrl,
    DB_CLUSTER_ARN: local.resourceArn,
    DB_NAME: fresh,
    OWNER_DB_SECRET_ARN: local.secretArns.admin,
    APP_DB_SECRET_ARN: appSecret,
    AUDIT_ADMIN_DB_SECRET_ARN: auditAdminSecret,
  });
});

afterAll(async () => {
  process.env = saved;
  stubs?.close();
  await local?.close();
  await test?.admin.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`);
  await test?.close();
});

/** A request as CloudFormation sends it; an Update carries the previous deploy's properties (a rollback: the next deploy's). */
const event = (RequestType: 'Create' | 'Update' | 'Delete', options: { rollback?: boolean } = {}) => {
  const now = Date.now();
  const [deployedAt, previous] = [now, now - 60_000].map((t) => new Date(t).toISOString()) as [string, string];
  return {
    RequestType,
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:migrate',
    ResponseURL: stubs.responseUrl,
    StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Logbook/1',
    RequestId: `request-${stubs.responses.length}`,
    ResourceType: 'Custom::LogbookSchema',
    LogicalResourceId: 'DatabaseSchema',
    ...(RequestType !== 'Create' && { PhysicalResourceId: 'logbook-schema' }),
    ResourceProperties: { ServiceToken: 'x', deployedAt: options.rollback ? previous : deployedAt },
    ...(RequestType === 'Update' && {
      OldResourceProperties: { ServiceToken: 'x', deployedAt: options.rollback ? deployedAt : previous },
    }),
  } as CloudFormationCustomResourceEvent;
};

const context = { logStreamName: '2026/11/21/[$LATEST]abc' } as Context;

/** What PostgreSQL stores as the role's password. */
const storedPassword = async (role: string) =>
  (
    await test.admin.query<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = :role::text', {
      role,
    })
  ).rows[0]!.rolpassword;

/** Whether `role` can log into the fresh database with `password` (the cluster authenticates with scram-sha-256). */
async function canLogIn(role: string, password: string): Promise<boolean> {
  const db = createPgDb({
    connectionString: withCredentials(databaseName(test.urls.admin, fresh), role, password),
    max: 1,
  });
  try {
    await db.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await db.close();
  }
}

describe('the migration custom resource', () => {
  it('applies every migration through the Data API on create and gives the roles their logins, then answers SUCCESS', async () => {
    await handler(event('Create'), context);
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'SUCCESS',
      PhysicalResourceId: 'logbook-schema',
      LogicalResourceId: 'DatabaseSchema',
      // Counts, not file names: the reply stays small whatever the number of migrations.
      Reason: `Applied ${loadMigrations().length} migration(s), 0001_roles.sql to ${loadMigrations().at(-1)!.name}`,
      Data: { applied: String(loadMigrations().length), latest: loadMigrations().at(-1)!.name },
    });
    // As the API's role, with the login the migration gave it.
    const app = createPgDb({ connectionString: databaseName(test.urls.app, fresh), max: 1 });
    try {
      expect((await app.query('SELECT count(*) AS n FROM schema_migrations')).rows).toEqual([
        { n: loadMigrations().length },
      ]);
    } finally {
      await app.close();
    }
  });

  it("writes the audit-admin login it sets into that role's secret, and never reads that secret", async () => {
    expect(JSON.parse(stubs.secrets.get(auditAdminSecret)!)).toEqual({
      username: 'logbook_audit_admin',
      password: localRolePasswords.auditAdmin,
    });
    expect(await canLogIn('logbook_audit_admin', localRolePasswords.auditAdmin)).toBe(true);
    expect(await canLogIn('logbook_audit_admin', 'placeholder')).toBe(false);
    const onAuditAdmin = stubs.calls.filter((call) => call.secretId === auditAdminSecret);
    expect(onAuditAdmin.length).toBeGreaterThan(0);
    expect(onAuditAdmin.every((call) => call.operation === 'PutSecretValue')).toBe(true);
  });

  it('sends PostgreSQL the passwords as SCRAM-SHA-256 verifiers, never as text', async () => {
    for (const role of ['logbook_app', 'logbook_audit_admin'])
      expect(await storedPassword(role)).toMatch(/^SCRAM-SHA-256\$4096:/);
    const statements = JSON.stringify(local.server.calls);
    expect(statements).not.toContain(localRolePasswords.app);
    expect(statements).not.toContain(localRolePasswords.auditAdmin);
  });

  it('finds nothing to apply on the next deploy, and writes the audit-admin login again', async () => {
    const writes = stubs.calls.filter((call) => call.operation === 'PutSecretValue').length;
    await handler(event('Update'), context);
    expect(stubs.responses.at(-1)).toMatchObject({ Status: 'SUCCESS', Reason: 'Up to date', Data: { applied: '0' } });
    expect(stubs.calls.filter((call) => call.operation === 'PutSecretValue')).toHaveLength(writes + 1);
  });

  it("keeps the role's password when its secret cannot be written, and answers FAILED", async () => {
    const refused = migrationHandler({ newPassword: () => 'a-password-that-must-not-be-set' });
    process.env.AUDIT_ADMIN_DB_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:not-writable-AbCdEf';
    try {
      await refused(event('Update'), context);
    } finally {
      process.env.AUDIT_ADMIN_DB_SECRET_ARN = auditAdminSecret;
    }
    expect(stubs.responses.at(-1)).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('AccessDenied') });
    // By the password, not its stored verifier: files running beside this one set the same local password again
    // (a fresh salt) when they prepare a database of the shared server.
    expect(await canLogIn('logbook_audit_admin', 'a-password-that-must-not-be-set')).toBe(false);
    expect(await canLogIn('logbook_audit_admin', localRolePasswords.auditAdmin)).toBe(true);
  });

  it('keeps the schema when the stack is deleted', async () => {
    await handler(event('Delete'), context);
    expect(stubs.responses.at(-1)).toMatchObject({ Status: 'SUCCESS', Reason: 'The schema is kept' });
    const admin = createPgDb({ connectionString: databaseName(test.urls.admin, fresh), max: 1 });
    try {
      expect((await admin.query('SELECT 1 FROM schema_migrations LIMIT 1')).rows).toHaveLength(1);
    } finally {
      await admin.close();
    }
  });

  it('answers FAILED with the reason when it cannot migrate, so the deploy stops', async () => {
    process.env.OWNER_DB_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:unknown-AbCdEf';
    try {
      await handler(event('Update'), context);
    } finally {
      process.env.OWNER_DB_SECRET_ARN = local.secretArns.admin;
    }
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringContaining('not known to this local Data API'),
    });
  });

  it('sets the logins again when CloudFormation rolls a failed deploy back', async () => {
    const writes = stubs.calls.filter((call) => call.operation === 'PutSecretValue').length;
    await handler(event('Update', { rollback: true }), context);
    expect(stubs.responses.at(-1)).toMatchObject({ Status: 'SUCCESS', Reason: 'Up to date' });
    expect(stubs.calls.filter((call) => call.operation === 'PutSecretValue')).toHaveLength(writes + 1);
  });

  it('never fails a rollback, which would leave the stack in UPDATE_ROLLBACK_FAILED: it answers SUCCESS with the reason', async () => {
    process.env.OWNER_DB_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:unknown-AbCdEf';
    try {
      await handler(event('Update', { rollback: true }), context);
    } finally {
      process.env.OWNER_DB_SECRET_ARN = local.secretArns.admin;
    }
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'SUCCESS',
      Reason: expect.stringMatching(/^Rolled back without this step: .*not known to this local Data API/),
    });
  });
});
