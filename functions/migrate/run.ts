/**
 * The migration custom resource, run on every deploy (its
 * `deployedAt` property changes each time): applies the pending SQL migrations through the Data API as the cluster's
 * administrator (the owner secret; every file after the bootstrap runs as logbook_owner), then gives the API's role
 * the login of its secret and the retention worker's role a new one (functions/migrate/role-logins.ts).
 */
import type { CloudFormationCustomResourceUpdateEvent } from 'aws-lambda';
import { createDataApiDb } from '#shared/db/data-api.ts';
import { loadMigrations, migrate } from '#shared/db/migrate.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import { logger } from '#shared/logger.ts';
import { customResource, setting } from './custom-resource.ts';
import { newPassword, rotateAuditAdminLogin, setAppLogin } from './role-logins.ts';

/**
 * CloudFormation rolls a failed deploy back by sending the previous properties again: an older `deployedAt` than
 * the one it replaces. The rollback still sets the logins (so the role and its secret agree), but never fails.
 */
function isRollback(event: CloudFormationCustomResourceUpdateEvent): boolean {
  const [next, previous] = [event.ResourceProperties.deployedAt, event.OldResourceProperties?.deployedAt];
  return typeof next === 'string' && typeof previous === 'string' && next < previous;
}

/** The name of the newest migration file: the schema version a deploy leaves. */
const latestMigration = () => loadMigrations().at(-1)?.name ?? '';

/** The handler; `options.newPassword` gives the audit-admin login its password (tests keep the cluster's local one). */
export function migrationHandler(options: { newPassword?: () => string } = {}) {
  return customResource({
    physicalResourceId: 'logbook-schema',
    // Deleting the stack keeps the schema: the cluster's own removal policy decides what becomes of the data.
    onDelete: 'The schema is kept',
    isRollback,
    apply: async () => {
      const admin = createDataApiDb({
        client: createRdsDataClient(),
        resourceArn: setting('DB_CLUSTER_ARN'),
        secretArn: setting('OWNER_DB_SECRET_ARN'),
        database: setting('DB_NAME'),
        // A deploy after a quiet spell finds the cluster paused at 0 ACU.
        resumeDeadlineMs: 60_000,
        // DDL on a large audit table may outlive a Data API call (45 s): it runs on, and the migration waits for it.
        continueAfterTimeout: true,
      });
      try {
        const applied = await migrate(admin, { log: (line) => logger.info(line) });
        await setAppLogin(admin, setting('APP_DB_SECRET_ARN'));
        await rotateAuditAdminLogin(
          admin,
          setting('AUDIT_ADMIN_DB_SECRET_ARN'),
          (options.newPassword ?? newPassword)(),
        );
        // Counts, not names: CloudFormation takes a reply of at most 4,096 bytes, whatever the number of migrations.
        return {
          reason:
            applied.length > 0
              ? `Applied ${applied.length} migration(s), ${applied[0]} to ${applied.at(-1)}`
              : 'Up to date',
          data: { applied: String(applied.length), latest: latestMigration() },
        };
      } finally {
        await admin.close();
      }
    },
  });
}

export const handler = migrationHandler();
