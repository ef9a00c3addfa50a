import { type RunningDataApiServer, startDataApiServer } from '#infra/local/data-api-server.ts';
import { createDataApiDb } from '#shared/db/data-api.ts';
import type { Db } from '#shared/db/db.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import type { TestDatabase } from './database.ts';

export type DataApiRole = 'admin' | 'app' | 'auditAdmin';

export interface LocalDataApi {
  server: RunningDataApiServer;
  resourceArn: string;
  secretArns: Record<DataApiRole, string>;
  database: string;
  /** A Data API executor acting as the role, through the real @aws-sdk/client-rds-data client; closed with the endpoint. */
  db(
    role: DataApiRole,
    options?: {
      database?: string;
      resumeDeadlineMs?: number;
      sleep?: (ms: number) => Promise<void>;
      continueAfterTimeout?: boolean;
      pollMs?: number;
      statementTimeoutMs?: number;
      roleTimeout?: boolean;
    },
  ): Db;
  /** The variables with which shared/db/client.ts connects through this endpoint, as a Lambda does. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export const testClusterArn = 'arn:aws:rds:us-east-1:123456789012:cluster:logbook-test';
const secretArn = (role: DataApiRole) => `arn:aws:secretsmanager:us-east-1:123456789012:secret:logbook-${role}-AbCdEf`;

/** A secret's login from a connection string, as Secrets Manager would hold it. */
const loginOf = (url: string) => {
  const parsed = new URL(url);
  return { username: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) };
};

/** The local Data API in front of the test database, with one secret per database role. */
export async function startLocalDataApi(
  test: TestDatabase,
  options: { callTimeoutMs?: number } = {},
): Promise<LocalDataApi> {
  const roles: DataApiRole[] = ['admin', 'app', 'auditAdmin'];
  const server = await startDataApiServer({
    ...options,
    serverUrl: test.urls.admin,
    resourceArn: testClusterArn,
    secrets: Object.fromEntries(roles.map((role) => [secretArn(role), loginOf(test.urls[role])])),
  });
  const opened: Db[] = [];
  return {
    server,
    resourceArn: testClusterArn,
    secretArns: { admin: secretArn('admin'), app: secretArn('app'), auditAdmin: secretArn('auditAdmin') },
    database: test.name,
    db(role, options = {}) {
      const db = createDataApiDb({
        client: createRdsDataClient({ endpoint: server.url }),
        resourceArn: testClusterArn,
        secretArn: secretArn(role),
        database: test.name,
        ...options,
      });
      opened.push(db);
      return db;
    },
    env: {
      DB_CLUSTER_ARN: testClusterArn,
      DB_NAME: test.name,
      APP_DB_SECRET_ARN: secretArn('app'),
      AUDIT_ADMIN_DB_SECRET_ARN: secretArn('auditAdmin'),
      DATA_API_ENDPOINT: server.url,
    },
    async close() {
      await Promise.all(opened.map((db) => db.close()));
      await server.close();
    },
  };
}
