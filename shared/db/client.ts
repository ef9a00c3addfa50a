import { type Db, dataApiMaxResultBytes, type Params, type Row } from './db.ts';
import { keyedRequestDb } from './idempotency.ts';
import { dbTimeouts } from './timeouts.ts';

/**
 * How a role connects, from the environment. In Lambda, the RDS Data API: DB_CLUSTER_ARN, DB_NAME and the
 * role's own secret (DATA_API_ENDPOINT points it at the local Data API of `npm start`); otherwise, locally and
 * in tests, the role's connection string (node-postgres).
 */
interface RoleConnection {
  urlVariable: string;
  secretVariable: string;
  applicationName: string;
  max: number;
  /** How long a call waits for an auto-paused cluster to resume (DB_RESUME_DEADLINE_MS overrides it). */
  resumeDeadlineMs: number;
  /** Whether the role's default statement timeout is DB_STATEMENT_TIMEOUT_MS (set with its login: the API's role). */
  roleTimeout?: boolean;
}

/** A Db that calls `onStatement` before each statement it runs, those inside its transactions included. */
function counted(db: Db, onStatement: () => void): Db {
  const query =
    (on: Db) =>
    <T extends Row>(sql: string, params?: Params) => {
      onStatement();
      return on.query<T>(sql, params);
    };
  return {
    query: query(db),
    transaction: (fn, options) => db.transaction((tx) => fn({ ...tx, query: query(tx) }), options),
    close: () => db.close(),
    maxResultBytes: db.maxResultBytes,
  };
}

/**
 * A Db whose executor module is imported on first use: a Lambda never evaluates node-postgres, a local
 * server never the AWS SDK. It tells its readers the result limit of the executor it will open.
 */
function deferred(open: () => Promise<Db>, maxResultBytes?: number): Db {
  let opened: Promise<Db> | undefined;
  const db = () => (opened ??= open());
  return {
    query: async <T extends Row>(sql: string, params?: Params) => (await db()).query<T>(sql, params),
    transaction: async (fn, options) => (await db()).transaction(fn, options),
    close: async () => {
      const current = await opened?.catch(() => undefined);
      await current?.close();
    },
    maxResultBytes,
  };
}

function connect(role: RoleConnection): Db {
  const resourceArn = process.env.DB_CLUSTER_ARN;
  if (resourceArn) {
    const secretArn = process.env[role.secretVariable];
    const database = process.env.DB_NAME;
    if (!secretArn || !database)
      throw new Error(`DB_CLUSTER_ARN is set, so ${role.secretVariable} and DB_NAME must be too`);
    const resumeDeadlineMs = Number(process.env.DB_RESUME_DEADLINE_MS) || role.resumeDeadlineMs;
    return deferred(async () => {
      const [{ createDataApiDb }, { createRdsDataClient }] = await Promise.all([
        import('./data-api.ts'),
        import('./rds-data-client.ts'),
      ]);
      const client = createRdsDataClient({ endpoint: process.env.DATA_API_ENDPOINT || undefined });
      const { statementTimeoutMs } = dbTimeouts();
      return createDataApiDb({
        client,
        resourceArn,
        secretArn,
        database,
        resumeDeadlineMs,
        statementTimeoutMs,
        roleTimeout: role.roleTimeout,
      });
    }, dataApiMaxResultBytes);
  }
  const url = process.env[role.urlVariable];
  if (!url) throw new Error(`${role.urlVariable} is not set`);
  return deferred(async () =>
    (await import('./pg.ts')).createPgDb({
      connectionString: url,
      max: role.max,
      applicationName: role.applicationName,
      ...dbTimeouts(),
    }),
  );
}

/**
 * The API's connection, as role logbook_app, built once per cold start.
 * Locally and in tests: APP_DATABASE_URL; in AWS the app role's secret (APP_DB_SECRET_ARN).
 */
let app: Db | undefined;
let appStatements = 0;

export function appDb(): Db {
  // API Gateway gives up on a request after 30 s: a resuming cluster may take 20 of them. A request sent with an
  // Idempotency-Key claims it in its first transaction (shared/db/idempotency.ts).
  app ??= keyedRequestDb(
    counted(
      connect({
        urlVariable: 'APP_DATABASE_URL',
        secretVariable: 'APP_DB_SECRET_ARN',
        applicationName: 'logbook-api',
        max: 10,
        resumeDeadlineMs: 20_000,
        roleTimeout: true,
      }),
      () => appStatements++,
    ),
  );
  return app;
}

/**
 * How many statements the API's connection has run in this process: each one resumes a paused Aurora, so the idle
 * floor is read from it (test/functions/system/idle.test.ts, bench/idle.ts; docs/operations.md "What it costs while idle").
 */
export function appStatementCount(): number {
  return appStatements;
}

/** Closes the API's connection; the next `appDb()` opens a new one from the environment. */
export async function closeAppDb(): Promise<void> {
  const current = app;
  app = undefined;
  await current?.close();
}

/**
 * The retention worker's connection, as role logbook_audit_admin. Locally: AUDIT_ADMIN_DATABASE_URL; in AWS its own secret (AUDIT_ADMIN_DB_SECRET_ARN),
 * granted to that function alone.
 */
let auditAdmin: Db | undefined;

export function auditAdminDb(): Db {
  auditAdmin ??= connect({
    urlVariable: 'AUDIT_ADMIN_DATABASE_URL',
    secretVariable: 'AUDIT_ADMIN_DB_SECRET_ARN',
    applicationName: 'logbook-retention',
    max: 1,
    resumeDeadlineMs: 45_000,
  });
  return auditAdmin;
}

/** Closes the worker's connection; the next `auditAdminDb()` opens a new one from the environment. */
export async function closeAuditAdminDb(): Promise<void> {
  const current = auditAdmin;
  auditAdmin = undefined;
  await current?.close();
}
