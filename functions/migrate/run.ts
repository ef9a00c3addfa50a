/**
 * The migration custom resource (DESIGN.md "Shape": CloudFormation ──► functions/migrate), run on every deploy:
 * applies the pending SQL migrations through the Data API as the cluster's administrator (the owner secret; every
 * file after the bootstrap runs as logbook_owner), then gives the API's and the retention worker's roles their
 * logins with the passwords of their own secrets. It answers CloudFormation itself at the request's ResponseURL.
 */
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { createDataApiDb } from '#shared/db/data-api.ts';
import { migrate } from '#shared/db/migrate.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { logger } from '#shared/logger.ts';
import { readSecret } from '#shared/secrets-manager.ts';

const setting = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const passwordOf = async (secretArn: string) => (JSON.parse(await readSecret(secretArn)) as { password: string }).password;

async function apply(): Promise<string[]> {
  const admin = createDataApiDb({
    client: createRdsDataClient(),
    resourceArn: setting('DB_CLUSTER_ARN'),
    secretArn: setting('OWNER_DB_SECRET_ARN'),
    database: setting('DB_NAME'),
    // A deploy after a quiet spell finds the cluster paused at 0 ACU.
    resumeDeadlineMs: 60_000,
  });
  try {
    const applied = await migrate(admin, { log: (line) => logger.info(line) });
    const [app, auditAdmin] = await Promise.all([passwordOf(setting('APP_DB_SECRET_ARN')), passwordOf(setting('AUDIT_ADMIN_DB_SECRET_ARN'))]);
    await grantRoleLogins(admin, { app, auditAdmin });
    return applied;
  } finally {
    await admin.close();
  }
}

async function respond(event: CloudFormationCustomResourceEvent, status: 'SUCCESS' | 'FAILED', reason: string, data: Record<string, string> = {}) {
  const body = JSON.stringify({
    Status: status,
    Reason: reason.slice(0, 3_000),
    PhysicalResourceId: 'PhysicalResourceId' in event ? event.PhysicalResourceId : 'logbook-schema',
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    Data: data,
  });
  const reply = await fetch(event.ResponseURL, { method: 'PUT', body, headers: { 'content-type': '' } });
  if (!reply.ok) throw new Error(`CloudFormation refused the response: ${reply.status}`);
}

export const handler = async (event: CloudFormationCustomResourceEvent, context: Context) => {
  // Deleting the stack keeps the schema: the cluster's own removal policy decides what becomes of the data.
  if (event.RequestType === 'Delete') return respond(event, 'SUCCESS', 'The schema is kept');
  try {
    const applied = await apply();
    logger.info('Migrations applied', { applied });
    await respond(event, 'SUCCESS', applied.length > 0 ? `Applied ${applied.join(', ')}` : 'Up to date', { applied: applied.join(',') });
  } catch (error) {
    logger.error('Migration failed', error as Error);
    await respond(event, 'FAILED', `${error instanceof Error ? error.message : String(error)} (log stream ${context.logStreamName})`);
  }
};
