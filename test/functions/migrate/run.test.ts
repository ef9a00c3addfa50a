/**
 * The migration custom resource (functions/migrate/run.ts) as CloudFormation runs it: through the Data API (the local
 * endpoint) as the owner, with the role passwords from Secrets Manager (a local stand-in), answering at ResponseURL.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/migrate/run.ts';
import { localRolePasswords } from '#infra/local/database.ts';
import { loadMigrations } from '#shared/db/migrate.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { startLocalDataApi, type LocalDataApi } from '#test/support/data-api.ts';
import { databaseName } from '#test/support/global-setup.ts';

let test: TestDatabase;
let local: LocalDataApi;
let fresh: string;
const servers: Server[] = [];
const responses: Record<string, any>[] = [];
const secrets: Record<string, string> = {
  'arn:aws:secretsmanager:us-east-1:123456789012:secret:app-AbCdEf': JSON.stringify({ username: 'logbook_app', password: localRolePasswords.app }),
  'arn:aws:secretsmanager:us-east-1:123456789012:secret:audit-admin-AbCdEf': JSON.stringify({ username: 'logbook_audit_admin', password: localRolePasswords.auditAdmin }),
};
const saved = { ...process.env };

async function listen(serve: (body: string, target: string | undefined) => { status: number; body: string }): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const reply = serve(body, req.headers['x-amz-target'] as string | undefined);
      res.writeHead(reply.status, { 'content-type': 'application/x-amz-json-1.1' }).end(reply.body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  test = await createTestDatabase();
  local = await startLocalDataApi(test);
  fresh = `${test.name}_cfn`;
  await test.admin.query(`CREATE DATABASE ${fresh}`);
  // Secrets Manager's GetSecretValue (awsJson1_1), for the two role secrets only.
  const secretsManager = await listen((body, target) => {
    const secret = secrets[(JSON.parse(body) as { SecretId: string }).SecretId];
    if (target !== 'secretsmanager.GetSecretValue' || !secret) return { status: 400, body: JSON.stringify({ __type: 'ResourceNotFoundException', message: 'not found' }) };
    return { status: 200, body: JSON.stringify({ SecretString: secret }) };
  });
  const cloudFormation = await listen((body) => {
    responses.push(JSON.parse(body));
    return { status: 200, body: '' };
  });
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_RDS_DATA: local.server.url,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager,
    DB_CLUSTER_ARN: local.resourceArn,
    DB_NAME: fresh,
    OWNER_DB_SECRET_ARN: local.secretArns.admin,
    APP_DB_SECRET_ARN: Object.keys(secrets)[0],
    AUDIT_ADMIN_DB_SECRET_ARN: Object.keys(secrets)[1],
    RESPONSE_URL: `${cloudFormation}/response`,
  });
});

afterAll(async () => {
  process.env = saved;
  for (const server of servers) server.close();
  await local?.close();
  await test?.admin.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`);
  await test?.close();
});

const event = (RequestType: 'Create' | 'Update' | 'Delete') =>
  ({
    RequestType,
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:migrate',
    ResponseURL: process.env.RESPONSE_URL!,
    StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Logbook/1',
    RequestId: `request-${responses.length}`,
    ResourceType: 'Custom::LogbookSchema',
    LogicalResourceId: 'DatabaseSchema',
    ...(RequestType !== 'Create' && { PhysicalResourceId: 'logbook-schema' }),
    ResourceProperties: { ServiceToken: 'x', deployedAt: new Date().toISOString() },
  }) as CloudFormationCustomResourceEvent;

const context = { logStreamName: '2026/11/21/[$LATEST]abc' } as Context;

describe('the migration custom resource', () => {
  it('applies every migration through the Data API on create and gives the roles their logins, then answers SUCCESS', async () => {
    await handler(event('Create'), context);
    expect(responses.at(-1)).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'logbook-schema', LogicalResourceId: 'DatabaseSchema', Data: { applied: loadMigrations().map((m) => m.name).join(',') } });
    // As the API's role, with the login the migration gave it.
    const app = createPgDb({ connectionString: databaseName(test.urls.app, fresh), max: 1 });
    try {
      expect((await app.query('SELECT count(*) AS n FROM schema_migrations')).rows).toEqual([{ n: loadMigrations().length }]);
    } finally {
      await app.close();
    }
  });

  it('finds nothing to apply on the next deploy', async () => {
    await handler(event('Update'), context);
    expect(responses.at(-1)).toMatchObject({ Status: 'SUCCESS', Reason: 'Up to date', Data: { applied: '' } });
  });

  it('keeps the schema when the stack is deleted', async () => {
    await handler(event('Delete'), context);
    expect(responses.at(-1)).toMatchObject({ Status: 'SUCCESS', Reason: 'The schema is kept' });
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
    expect(responses.at(-1)).toMatchObject({ Status: 'FAILED', Reason: expect.stringContaining('not known to this local Data API') });
  });
});
