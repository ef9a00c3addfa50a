import {
  type ArrayValue,
  BeginTransactionCommand,
  type ColumnMetadata,
  CommitTransactionCommand,
  ExecuteStatementCommand,
  type Field,
  type RDSDataClient,
  RollbackTransactionCommand,
  type SqlParameter,
} from '@aws-sdk/client-rds-data';
import {
  type Db,
  dataApiMaxResultBytes,
  encodeParam,
  type Isolation,
  openTx,
  type Params,
  parseNamedParams,
  type QueryResult,
  type Row,
  type SqlValue,
  type Tx,
} from './db.ts';

/**
 * A failed Data API call as the rest of the code knows database errors: `code` is the SQLSTATE the Data
 * API reports in its message (`...; SQLState: 23505`), so shared/http/error-envelope.ts maps it as it maps
 * node-postgres errors, or one chosen here for the Data API's own failures (see `translate`).
 */
export class DataApiError extends Error {
  override name = 'DataApiError';
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** `code` of a result above the Data API's 1 MiB response limit, or with a row above its 64 KB row limit. */
export const resultTooLargeCode = 'DATA_API_RESULT_TOO_LARGE';

export interface DataApiDbOptions {
  /** The executor's own client: `close()` destroys it. */
  client: RDSDataClient;
  /** The Aurora cluster. */
  resourceArn: string;
  /** The Secrets Manager secret of the database role this executor acts as. */
  secretArn: string;
  database: string;
  /**
   * How long one call keeps retrying DatabaseResumingException while an auto-paused (0 ACU) cluster
   * resumes, in milliseconds: about 20 s for API calls (API Gateway gives up at 30 s), 45 s for workers.
   */
  resumeDeadlineMs?: number;
  /** Waits between retries (tests shorten it). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Long statements (DDL on a large table, in migrations): a transaction's statement runs on after the Data API call
   * times out (`continueAfterTimeout`), and the executor polls its session until it ends, every `pollMs` (5 s).
   */
  continueAfterTimeout?: boolean;
  pollMs?: number;
  /**
   * DB_STATEMENT_TIMEOUT_MS (shared/db/timeouts.ts; 0 or none: no bound): each transaction starts with `SET LOCAL
   * statement_timeout` to it (unless `roleTimeout`), and every call (but a continueAfterTimeout one) is abandoned 2 s after it, as
   * node-postgres abandons a query to a server that stopped answering. Either way the caller hears 57014 (503).
   */
  statementTimeoutMs?: number;
  /**
   * The role's own default `statement_timeout` is `statementTimeoutMs` (the API's role gets it with its login,
   * shared/db/roles.ts, and a session the Data API opens takes it): a transaction then sets none of its own, one
   * Data API call fewer each, and its statements are bounded the same.
   */
  roleTimeout?: boolean;
}

const defaultResumeDeadlineMs = 20_000;

const parameterNames = new Map<string, string[]>();

/** The distinct `:name` parameters of a statement, cached per statement text. */
function namesOf(sql: string): string[] {
  let names = parameterNames.get(sql);
  if (!names) {
    names = [...new Set(parseNamedParams(sql).names)];
    parameterNames.set(sql, names);
  }
  return names;
}

/**
 * A parameter value as a Data API field. Every parameter carries an explicit cast in the SQL, so no typeHint is sent: text goes as a string (the Data API types it character varying,
 * which casts to uuid, jsonb or timestamptz), JSON and dates as their text, whole numbers as long.
 */
export function toField(value: SqlValue | undefined): Field {
  const encoded = encodeParam(value);
  if (encoded === null) return { isNull: true };
  if (typeof encoded === 'boolean') return { booleanValue: encoded };
  if (typeof encoded === 'number') {
    if (!Number.isFinite(encoded)) throw new Error(`SQL parameter ${encoded} is not a finite number`);
    return Number.isSafeInteger(encoded) ? { longValue: encoded } : { doubleValue: encoded };
  }
  return { stringValue: encoded };
}

/** A timestamp as the Data API writes it (`2026-03-01 10:00:00.123456`, UTC, or with an offset) as a Date, like node-postgres. */
function parseTimestamp(text: string): Date | number {
  if (text === 'infinity') return Infinity;
  if (text === '-infinity') return -Infinity;
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?:\s*(Z|[+-]\d{2})(?::?(\d{2}))?)?$/.exec(text);
  if (!match) return new Date(text);
  const [, date, time, zone, zoneMinutes] = match;
  const offset = zone === undefined || zone === 'Z' ? 'Z' : `${zone}:${zoneMinutes ?? '00'}`;
  return new Date(`${date}T${time}${offset}`);
}

/** A date as node-postgres gives it: local midnight of that day. */
function parseDate(text: string): Date {
  const [year, month, day] = text.split('-').map(Number);
  return new Date(year!, month! - 1, day!);
}

function arrayOf(value: ArrayValue | null): unknown[] {
  if (!value) return [];
  return (
    value.stringValues ??
    value.longValues ??
    value.doubleValues ??
    value.booleanValues ??
    value.arrayValues?.map(arrayOf) ??
    []
  );
}

/**
 * A Data API field as the JS value node-postgres gives for the column's type (shared/db/pg.ts): Date for
 * timestamps, parsed JSON, numbers for integers (int8 included), strings for numeric, uuid and text.
 */
export function fromField(field: Field, column: ColumnMetadata | undefined): unknown {
  if (field.isNull) return null;
  if (field.stringValue !== undefined) {
    switch (column?.typeName?.toLowerCase()) {
      case 'timestamptz':
      case 'timestamp':
        return parseTimestamp(field.stringValue);
      case 'date':
        return parseDate(field.stringValue);
      case 'json':
      case 'jsonb':
        return JSON.parse(field.stringValue);
      default:
        return field.stringValue;
    }
  }
  if (field.longValue !== undefined) return field.longValue;
  if (field.doubleValue !== undefined) return field.doubleValue;
  if (field.booleanValue !== undefined) return field.booleanValue;
  if (field.blobValue !== undefined) return Buffer.from(field.blobValue);
  if (field.arrayValue !== undefined) return arrayOf(field.arrayValue);
  return null;
}

const awsError = (error: unknown) => error as { name?: string; message?: string } | null;

/**
 * The Data API's errors as database errors: a statement's error keeps the PostgreSQL message and its
 * SQLSTATE; the cluster unavailable or still resuming reads as a connection failure (503 to callers),
 * a statement timeout as a cancelled query, and a result above 1 MiB says so.
 */
function translate(error: unknown): unknown {
  const { name = '', message = String(error) } = awsError(error) ?? {};
  if (/packet for query is too large/i.test(message)) {
    return new DataApiError(
      `A row of the result is larger than the Data API's 64 KB row limit; return it in smaller rows (${message})`,
      resultTooLargeCode,
      { cause: error },
    );
  }
  if (/response size limit|response exceeded size limit/i.test(message)) {
    return new DataApiError(
      `The result is larger than the Data API's 1 MiB response limit; page the query (${message})`,
      resultTooLargeCode,
      { cause: error },
    );
  }
  if (name === 'DatabaseErrorException' || name === 'BadRequestException') {
    const sqlState = /SQLState: ([0-9A-Z]{5})/.exec(message)?.[1];
    return sqlState ? new DataApiError(message, sqlState, { cause: error }) : error;
  }
  if (name === 'DatabaseResumingException') return new DataApiError(message, '57P03', { cause: error });
  if (name === 'DatabaseUnavailableException' || name === 'ServiceUnavailableError')
    return new DataApiError(message || name, '08006', { cause: error });
  if (name === 'StatementTimeoutException') return new DataApiError(message, '57014', { cause: error });
  // The call abandoned by the executor's own bound (statementTimeoutMs): the database did not answer in time.
  if (name === 'AbortError' || name === 'TimeoutError')
    return new DataApiError(`The Data API did not answer in time (${message})`, '57014', { cause: error });
  return error;
}

const maxResultBytes = dataApiMaxResultBytes;

/**
 * The RDS Data API executor of `Db`, used in Lambda: named parameters passed as
 * typed fields, typed records converted by column type to the values node-postgres gives, transactions
 * through BeginTransaction/CommitTransaction/RollbackTransaction, and DatabaseResumingException (Aurora
 * waking from 0 ACU) retried with backoff until `resumeDeadlineMs`.
 */
export function createDataApiDb(options: DataApiDbOptions): Db {
  const { client, resourceArn, secretArn, database } = options;
  const deadlineMs = options.resumeDeadlineMs ?? defaultResumeDeadlineMs;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const statementTimeoutMs = options.statementTimeoutMs ?? 0;
  /** A call's options: abandoned 2 s past the statement timeout, unless its statement may outlive it. */
  const bounded = (outlives = false) =>
    statementTimeoutMs > 0 && !outlives ? { abortSignal: AbortSignal.timeout(statementTimeoutMs + 2_000) } : {};

  /** One Data API call; a resuming cluster never ran the statement, so the call is repeated until the deadline. */
  async function call<T>(send: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + deadlineMs;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await send();
      } catch (error) {
        if (awsError(error)?.name !== 'DatabaseResumingException') throw translate(error);
        const wait = Math.min(500 * 2 ** attempt, 5_000);
        if (Date.now() + wait > deadline) throw translate(error);
        await sleep(wait);
      }
    }
  }

  /**
   * Waits until the session `pid` no longer runs the statement whose call timed out: done when its transaction is
   * idle again, failed when it was aborted or the session is gone (the statement's own result is not seen).
   */
  async function statementEnded(pid: number): Promise<void> {
    for (;;) {
      const { rows } = await execute<{ state: string }>('SELECT state FROM pg_stat_activity WHERE pid = :pid::int', {
        pid,
      });
      const state = rows[0]?.state;
      if (state === 'idle in transaction') return;
      if (state !== 'active')
        throw new DataApiError(
          `A statement that outlived its Data API call failed (its session is ${state ?? 'gone'})`,
          '57014',
        );
      await sleep(options.pollMs ?? 5_000);
    }
  }

  async function execute<T extends Row>(
    sql: string,
    params: Params = {},
    transactionId?: string,
    session?: { pid: number },
  ): Promise<QueryResult<T>> {
    const parameters: SqlParameter[] = namesOf(sql).map((name) => {
      if (!(name in params)) throw new Error(`missing SQL parameter :${name}`);
      return { name, value: toField(params[name]) };
    });
    const send = () =>
      client.send(
        new ExecuteStatementCommand({
          resourceArn,
          secretArn,
          database,
          sql,
          parameters,
          transactionId,
          continueAfterTimeout: session ? true : undefined,
          includeResultMetadata: true,
          resultSetOptions: { decimalReturnType: 'STRING', longReturnType: 'LONG' },
        }),
        bounded(Boolean(session)),
      );
    let output: Awaited<ReturnType<typeof send>>;
    try {
      output = await call(send);
    } catch (error) {
      // The statement runs on in its session: wait for it, its result is not needed (DDL).
      if (!(session && error instanceof DataApiError && error.code === '57014')) throw error;
      await statementEnded(session.pid);
      return { rows: [], rowCount: 0 };
    }
    const columns = output.columnMetadata ?? [];
    const rows = (output.records ?? []).map((record) => {
      const row: Row = {};
      record.forEach((field, index) => {
        const column = columns[index];
        row[column?.label ?? column?.name ?? String(index)] = fromField(field, column);
      });
      return row as T;
    });
    // A SELECT reports 0 records updated; a write without RETURNING reports no records.
    return { rows, rowCount: Math.max(rows.length, output.numberOfRecordsUpdated ?? 0) };
  }

  return {
    query: (sql, params) => execute(sql, params),
    async transaction<T>(fn: (tx: Tx) => Promise<T>, opts?: { isolation?: Isolation }) {
      const { transactionId } = await call(() =>
        client.send(new BeginTransactionCommand({ resourceArn, secretArn, database }), bounded()),
      );
      // The Data API refuses a second statement while one of the transaction runs: statements take turns.
      let tail: Promise<unknown> = Promise.resolve();
      const inTurn = <R>(task: () => Promise<R>): Promise<R> => {
        const next = tail.then(task, task);
        tail = next.catch(() => undefined);
        return next;
      };
      // The session's pid, by which a statement that outlives its call is followed (continueAfterTimeout).
      let session: { pid: number } | undefined;
      const { tx, committed, commitUnknown } = openTx({
        query: (sql, params) => inTurn(() => execute(sql, params, transactionId, session)),
        maxResultBytes,
      });
      try {
        // BeginTransaction takes no isolation level: it is set by the transaction's first statement.
        if (opts?.isolation) await tx.query(`SET TRANSACTION ISOLATION LEVEL ${opts.isolation}`);
        // The server cancels a statement past the timeout (57014): the transaction then rolls back, never commits late.
        if (statementTimeoutMs > 0 && !options.roleTimeout)
          await tx.query("SELECT set_config('statement_timeout', :ms::text, true)", { ms: String(statementTimeoutMs) });
        if (options.continueAfterTimeout)
          session = { pid: Number((await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid) };
        const result = await fn(tx);
        // The commit is never abandoned: the cluster may still commit it, and what follows (the audit) must run.
        await inTurn(() =>
          call(() =>
            client.send(new CommitTransactionCommand({ resourceArn, secretArn, transactionId }), bounded(true)),
          ),
        ).catch((error: unknown) => {
          commitUnknown();
          throw error;
        });
        committed();
        return result;
      } catch (error) {
        await inTurn(() =>
          client.send(new RollbackTransactionCommand({ resourceArn, secretArn, transactionId }), bounded()),
        ).catch(() => undefined);
        throw error;
      }
    },
    // Calls are stateless HTTPS requests; closing frees the client's kept-alive sockets.
    close: async () => client.destroy(),
    maxResultBytes,
  };
}
