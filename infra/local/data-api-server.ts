/**
 * A local RDS Data API over PostgreSQL, so the real `@aws-sdk/client-rds-data` client runs unchanged against it
 * (`LOGBOOK_DB_DRIVER=data-api`, the contract tests); where it mimics AWS: docs/ARCHITECTURE.md.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { parseNamedParams } from '#shared/db/db.ts';
import { hearPoolErrors } from '#shared/db/pg.ts';

/** A login the endpoint knows by its secret's ARN, as Secrets Manager would hold it. */
export interface DataApiSecret {
  username: string;
  password: string;
}

export interface DataApiServerOptions {
  /** A PostgreSQL server; each request's `database` replaces the URL's. */
  serverUrl: string;
  /** The cluster ARN the endpoint answers for. */
  resourceArn: string;
  secrets: Record<string, DataApiSecret>;
  port?: number;
  host?: string;
  /**
   * How long an ExecuteStatement call waits for its statement (the Data API's is 45 s): then it answers
   * StatementTimeoutException, and the statement is cancelled unless the call set `continueAfterTimeout`, in which case
   * it runs on (its transaction stays busy until it ends). None: calls wait as long as their statement runs.
   */
  callTimeoutMs?: number;
}

export interface RunningDataApiServer {
  url: string;
  /** The operations called so far, in order, with their SQL. */
  calls: { operation: string; sql?: string; transactionId?: string }[];
  /** Answers the next `calls` requests (or those of the next `ms` milliseconds) with DatabaseResumingException, as a cluster waking from 0 ACU. */
  pause(options: { calls?: number; ms?: number }): void;
  close(): Promise<void>;
}

/** The Data API's response size limit. */
export const maxResponseBytes = 1024 * 1024;
/** The Data API's limit of one row of a result, as the database returns it. */
export const maxRowBytes = 64 * 1024;
/** The Data API ends a transaction no call has used for this long. */
const transactionIdleMs = 3 * 60 * 1000;
/** Calls are recorded up to this many, then the oldest are dropped. */
const callLog = 10_000;

class ApiError extends Error {
  constructor(
    readonly type: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string) => new ApiError('BadRequestException', 400, message);

interface Field {
  isNull?: boolean;
  booleanValue?: boolean;
  longValue?: number;
  doubleValue?: number;
  stringValue?: string;
  blobValue?: string;
  arrayValue?: unknown;
}

interface SqlParameter {
  name?: string;
  value?: Field;
  typeHint?: string;
}

interface Transaction {
  client: pg.PoolClient;
  busy: boolean;
  timer: NodeJS.Timeout;
  types: Map<number, string>;
  /** Ends the transaction when its connection fails; removed when the transaction ends. */
  onError: (error: Error) => void;
}

const oid = {
  bool: 16,
  bytea: 17,
  int8: 20,
  varchar: 1043,
  float8: 701,
  uuid: 2950,
  json: 114,
  timestamp: 1114,
  date: 1082,
  time: 1083,
  numeric: 1700,
};
const hinted: Record<string, number> = {
  UUID: oid.uuid,
  JSON: oid.json,
  TIMESTAMP: oid.timestamp,
  DATE: oid.date,
  TIME: oid.time,
  DECIMAL: oid.numeric,
};

/** Parameter types and texts as the Data API passes them (see the header). */
function bindParameter(parameter: SqlParameter): { type: number; value: string | Buffer | null } {
  const field = parameter.value ?? {};
  if (parameter.typeHint !== undefined) {
    const type = hinted[parameter.typeHint];
    if (type === undefined) throw badRequest(`Invalid typeHint ${parameter.typeHint}`);
    if (field.isNull) return { type, value: null };
    if (field.stringValue === undefined)
      throw badRequest(`typeHint ${parameter.typeHint} applies to a stringValue only`);
    return { type, value: field.stringValue };
  }
  if (field.isNull) return { type: 0, value: null };
  if (field.stringValue !== undefined) return { type: oid.varchar, value: field.stringValue };
  if (field.longValue !== undefined) return { type: oid.int8, value: String(field.longValue) };
  if (field.doubleValue !== undefined) return { type: oid.float8, value: String(field.doubleValue) };
  if (field.booleanValue !== undefined) return { type: oid.bool, value: String(field.booleanValue) };
  if (field.blobValue !== undefined) return { type: oid.bytea, value: Buffer.from(field.blobValue, 'base64') };
  if (field.arrayValue !== undefined) throw badRequest('Array parameters are not supported');
  return { type: 0, value: null };
}

/** `:name` parameters to `$n` with their types; a name no parameter supplies stays as written, for PostgreSQL to refuse. */
function bindStatement(sql: string, parameters: SqlParameter[]) {
  const byName = new Map(parameters.map((p) => [p.name ?? '', p]));
  const { parts, names } = parseNamedParams(sql);
  const order: string[] = [];
  let text = parts[0]!;
  names.forEach((name, index) => {
    if (!byName.has(name)) {
      text += `:${name}${parts[index + 1]}`;
      return;
    }
    let position = order.indexOf(name);
    if (position === -1) position = order.push(name) - 1;
    text += `$${position + 1}${parts[index + 1]}`;
  });
  const bound = order.map((name) => bindParameter(byName.get(name)!));
  return { text, types: bound.map((b) => b.type), values: bound.map((b) => b.value) };
}

/** JDBC type codes of columnMetadata.type. */
const jdbcTypes: Record<string, number> = {
  bool: -7,
  int2: 5,
  int4: 4,
  int8: -5,
  float4: 7,
  float8: 8,
  numeric: 2,
  varchar: 12,
  text: 12,
  bpchar: 1,
  name: 12,
  date: 91,
  time: 92,
  timestamp: 93,
  timestamptz: 93,
  bytea: -2,
};

/** A one-dimensional PostgreSQL array literal's elements (null for NULL); multi-dimensional arrays are refused, as by the Data API. */
function arrayElements(text: string): (string | null)[] {
  if (text === '{}') return [];
  const items: (string | null)[] = [];
  let i = 1;
  while (i < text.length - 1) {
    if (text[i] === '{')
      throw new ApiError('UnsupportedResultException', 400, 'The result contains a multidimensional array');
    if (text[i] === '"') {
      let item = '';
      i += 1;
      while (text[i] !== '"') {
        if (text[i] === '\\') i += 1;
        item += text[i];
        i += 1;
      }
      items.push(item);
      i += 2;
    } else {
      const end = text.indexOf(',', i) === -1 ? text.length - 1 : text.indexOf(',', i);
      const item = text.slice(i, end);
      items.push(item === 'NULL' ? null : item);
      i = end + 1;
    }
  }
  return items;
}

/** A column value as a Data API field. */
function toField(text: string | null, typeName: string): Field {
  if (text === null) return { isNull: true };
  if (typeName.startsWith('_')) {
    const items = arrayElements(text);
    const element = typeName.slice(1);
    const kind = toField('0', element);
    const values = items.map((item) => (item === null ? null : Object.values(toField(item, element))[0]));
    if (kind.longValue !== undefined) return { arrayValue: { longValues: values } };
    if (kind.doubleValue !== undefined) return { arrayValue: { doubleValues: values } };
    if (element === 'bool') return { arrayValue: { booleanValues: values } };
    return { arrayValue: { stringValues: values } };
  }
  switch (typeName) {
    case 'bool':
      return { booleanValue: text === 't' };
    case 'int2':
    case 'int4':
    case 'int8':
    case 'oid':
      return { longValue: Number(text) };
    case 'float4':
    case 'float8':
      return { doubleValue: Number(text) };
    case 'bytea':
      return { blobValue: Buffer.from(text.slice(2), 'hex').toString('base64') };
    case 'timestamptz':
      // Sessions run in UTC; the Data API writes the instant without the offset.
      return { stringValue: text.replace(/\+00$/, '') };
    default:
      return { stringValue: text };
  }
}

/** A PostgreSQL error in the Data API's words. */
function databaseError(error: pg.DatabaseError): ApiError {
  let message = `ERROR: ${error.message}`;
  if (error.hint) message += `\n  Hint: ${error.hint}`;
  if (error.position) message += `\n  Position: ${error.position}`;
  return new ApiError('DatabaseErrorException', 400, `${message}; SQLState: ${error.code}`);
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? '';
    if (code.startsWith('08') || code.startsWith('57P')) return new ApiError('DatabaseUnavailableException', 504, '');
    return databaseError(error);
  }
  const code = (error as { code?: string }).code ?? '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT'].includes(code))
    return new ApiError('DatabaseUnavailableException', 504, '');
  return new ApiError('InternalServerErrorException', 500, '');
}

export async function startDataApiServer(options: DataApiServerOptions): Promise<RunningDataApiServer> {
  const pools = new Map<string, pg.Pool>();
  const typeNames = new Map<string, Map<number, string>>();
  const transactions = new Map<string, Transaction>();
  const calls: RunningDataApiServer['calls'] = [];
  let paused = { calls: 0, until: 0 };

  function secretOf(body: Record<string, unknown>): DataApiSecret {
    if (body.resourceArn !== options.resourceArn)
      throw badRequest(
        `The resourceArn ${String(body.resourceArn)} is not this local Data API's cluster (${options.resourceArn})`,
      );
    const secret = options.secrets[String(body.secretArn)];
    if (!secret) throw badRequest(`The secret ${String(body.secretArn)} is not known to this local Data API`);
    return secret;
  }

  function poolOf(body: Record<string, unknown>): { pool: pg.Pool; database: string } {
    const secret = secretOf(body);
    const url = new URL(options.serverUrl);
    const database =
      typeof body.database === 'string' && body.database ? body.database : url.pathname.slice(1) || 'postgres';
    // Keyed by the secret's current value too: like the Data API, which reads the secret on every call, a rotated
    // login is used from the next call on (and the old one no longer is).
    const key = JSON.stringify([body.secretArn, database, secret.username, secret.password]);
    let pool = pools.get(key);
    if (!pool) {
      url.pathname = `/${database}`;
      url.username = encodeURIComponent(secret.username);
      url.password = encodeURIComponent(secret.password);
      pool = new pg.Pool({
        connectionString: url.toString(),
        max: 10,
        application_name: 'logbook-data-api',
        options: '-c TimeZone=UTC',
      });
      hearPoolErrors(pool);
      pools.set(key, pool);
    }
    return { pool, database };
  }

  function transactionOf(body: Record<string, unknown>): Transaction {
    const id = String(body.transactionId);
    const transaction = transactions.get(id);
    if (!transaction) throw new ApiError('TransactionNotFoundException', 404, `Transaction ${id} is not found`);
    transaction.timer.refresh();
    return transaction;
  }

  async function endTransaction(id: string, sql: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    const transaction = transactions.get(id);
    if (!transaction) return;
    transactions.delete(id);
    clearTimeout(transaction.timer);
    transaction.client.off('error', transaction.onError);
    try {
      await transaction.client.query(sql);
      transaction.client.release();
    } catch (error) {
      transaction.client.release(error as Error);
      throw error;
    }
  }

  /** Type names by OID, looked up once per database on the connection that met them (a type may be new in its transaction). */
  async function typeNamesOf(
    client: pg.PoolClient,
    cache: Map<number, string>,
    oids: number[],
  ): Promise<Map<number, string>> {
    const missing = [...new Set(oids)].filter((o) => !cache.has(o));
    if (missing.length > 0) {
      const { rows } = await client.query<{ oid: number; typname: string }>(
        'SELECT oid::int AS oid, typname::text AS typname FROM pg_type WHERE oid = ANY($1::oid[])',
        [missing],
      );
      for (const row of rows) cache.set(row.oid, row.typname);
    }
    return cache;
  }

  async function execute(client: pg.PoolClient, types: Map<number, string>, body: Record<string, unknown>) {
    if (typeof body.sql !== 'string') throw badRequest('sql is required');
    const parameters = (body.parameters ?? []) as SqlParameter[];
    const bound = bindStatement(body.sql, parameters);
    const rawText = Object.assign([...bound.types], { getTypeParser: () => (value: string) => value });
    const result = await client.query({
      text: bound.text,
      values: bound.values,
      types: rawText,
      rowMode: 'array',
      queryMode: 'extended',
    } as unknown as pg.QueryArrayConfig);
    const written = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'].includes(result.command) ? (result.rowCount ?? 0) : 0;
    if (result.fields.length === 0) return { numberOfRecordsUpdated: written };
    const names = await typeNamesOf(
      client,
      types,
      result.fields.map((f) => f.dataTypeID),
    );
    const columns = result.fields.map((f) => ({ name: f.name, typeName: names.get(f.dataTypeID) ?? 'unknown' }));
    const response: Record<string, unknown> = { numberOfRecordsUpdated: written };
    if (body.includeResultMetadata) {
      response.columnMetadata = columns.map(({ name, typeName }) => ({
        name,
        label: name,
        typeName,
        type: typeName.startsWith('_') ? 2003 : (jdbcTypes[typeName] ?? 1111),
        nullable: 2,
        schemaName: '',
        tableName: '',
        arrayBaseColumnType: 0,
      }));
    }
    for (const row of result.rows as (string | null)[][]) {
      const bytes = row.reduce((sum, value) => sum + (value === null ? 0 : Buffer.byteLength(value)), 0);
      if (bytes > maxRowBytes)
        throw badRequest(`Packet for query is too large: a row of ${bytes} bytes is above the 64 KB row limit`);
    }
    const records = (result.rows as (string | null)[][]).map((row) =>
      row.map((value, i) => toField(value, columns[i]!.typeName)),
    );
    if (body.formatRecordsAs === 'JSON') {
      const plain = (field: Field) => {
        if (field.isNull) return null;
        if (field.arrayValue) return Object.values(field.arrayValue)[0];
        return Object.values(field)[0];
      };
      response.formattedRecords = JSON.stringify(
        records.map((record) => Object.fromEntries(record.map((field, i) => [columns[i]!.name, plain(field)]))),
      );
    } else {
      response.records = records;
    }
    return response;
  }

  /**
   * `statement` (running on `client`) within the call timeout: past it, StatementTimeoutException, the statement
   * cancelled or, with continueAfterTimeout, left to run; `done` runs once the statement itself has ended.
   */
  async function withinCallTimeout<T>(
    client: pg.PoolClient,
    statement: Promise<T>,
    body: Record<string, unknown>,
    done: () => void,
  ): Promise<T> {
    const ended = statement.finally(done);
    if (options.callTimeoutMs === undefined) return ended;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.callTimeoutMs);
    });
    try {
      const outcome = await Promise.race([ended, timedOut]);
      if (outcome !== 'timeout') return outcome;
    } finally {
      clearTimeout(timer);
    }
    ended.catch(() => undefined);
    if (!body.continueAfterTimeout) {
      const pid = (client as unknown as { processID: number }).processID;
      const { pool } = poolOf(body);
      await pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
    }
    throw new ApiError('StatementTimeoutException', 400, 'Request timed out');
  }

  /** Runs one statement on the transaction's connection, or on a pooled one in autocommit. */
  async function executeStatement(body: Record<string, unknown>) {
    if (body.transactionId !== undefined) {
      secretOf(body);
      const transaction = transactionOf(body);
      if (transaction.busy) throw new ApiError('DatabaseErrorException', 400, 'Transaction is still running a query');
      transaction.busy = true;
      return withinCallTimeout(transaction.client, execute(transaction.client, transaction.types, body), body, () => {
        transaction.busy = false;
      });
    }
    const { pool, database } = poolOf(body);
    const client = await pool.connect();
    return withinCallTimeout(client, execute(client, typesOf(database), body), body, () => client.release());
  }

  function typesOf(database: string): Map<number, string> {
    const types = typeNames.get(database) ?? new Map<number, string>();
    typeNames.set(database, types);
    return types;
  }

  const operations: Record<string, (body: Record<string, unknown>) => Promise<unknown>> = {
    '/Execute': async (body) => {
      const response = await executeStatement(body);
      if (Buffer.byteLength(JSON.stringify(response)) > maxResponseBytes) {
        if (body.transactionId !== undefined)
          await endTransaction(String(body.transactionId), 'ROLLBACK').catch(() => undefined);
        throw badRequest('Database returned more than the allowed response size limit');
      }
      return response;
    },
    '/BatchExecute': async (body) => {
      const sets = (body.parameterSets ?? [[]]) as SqlParameter[][];
      const run = async (client: pg.PoolClient, types: Map<number, string>) => {
        const updateResults = [];
        for (const parameters of sets) {
          const result = await execute(client, types, { ...body, parameters, includeResultMetadata: false });
          const first = (result.records as Field[][] | undefined)?.[0];
          updateResults.push({ generatedFields: first ?? [] });
        }
        return { updateResults };
      };
      if (body.transactionId !== undefined) {
        secretOf(body);
        const transaction = transactionOf(body);
        if (transaction.busy) throw new ApiError('DatabaseErrorException', 400, 'Transaction is still running a query');
        transaction.busy = true;
        try {
          return await run(transaction.client, transaction.types);
        } finally {
          transaction.busy = false;
        }
      }
      // Outside a transaction the batch is one: every parameter set is stored, or none.
      const { pool, database } = poolOf(body);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await run(client, typesOf(database));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    '/BeginTransaction': async (body) => {
      const { pool, database } = poolOf(body);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
      const transactionId = randomBytes(48).toString('base64');
      // A backend terminated while the transaction is idle emits 'error' on its client: the transaction ends (its
      // next call answers TransactionNotFound) instead of the process.
      const onError = (error: Error) => {
        const transaction = transactions.get(transactionId);
        if (!transaction) return;
        transactions.delete(transactionId);
        clearTimeout(transaction.timer);
        client.off('error', onError);
        client.release(error);
      };
      client.on('error', onError);
      const timer = setTimeout(
        () => void endTransaction(transactionId, 'ROLLBACK').catch(() => undefined),
        transactionIdleMs,
      ).unref();
      transactions.set(transactionId, { client, busy: false, timer, types: typesOf(database), onError });
      return { transactionId };
    },
    '/CommitTransaction': async (body) => {
      secretOf(body);
      transactionOf(body);
      await endTransaction(String(body.transactionId), 'COMMIT');
      return { transactionStatus: 'Transaction Committed' };
    },
    '/RollbackTransaction': async (body) => {
      secretOf(body);
      transactionOf(body);
      await endTransaction(String(body.transactionId), 'ROLLBACK');
      return { transactionStatus: 'Rollback Complete' };
    },
  };

  function reply(res: ServerResponse, status: number, body: unknown, errorType?: string) {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      'x-amzn-requestid': randomUUID(),
      ...(errorType && { 'x-amzn-errortype': errorType }),
    });
    res.end(text);
  }

  async function serve(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? '/').split('?')[0]!;
    const operation = req.method === 'POST' ? operations[path] : undefined;
    if (!operation)
      return reply(res, 404, { message: `Unknown operation ${req.method} ${path}` }, 'UnknownOperationException');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      return reply(res, 400, { message: 'Request body is not valid JSON' }, 'SerializationException');
    }
    calls.push({
      operation: path.slice(1),
      ...(typeof body.sql === 'string' && { sql: body.sql }),
      ...(typeof body.transactionId === 'string' && { transactionId: body.transactionId }),
    });
    if (calls.length > callLog) calls.shift();
    if (paused.calls > 0 || Date.now() < paused.until) {
      paused.calls = Math.max(paused.calls - 1, 0);
      const message = `The Aurora DB instance ${options.resourceArn} is resuming after being auto-paused. Please wait a few seconds and try again.`;
      return reply(res, 400, { message }, 'DatabaseResumingException');
    }
    try {
      reply(res, 200, await operation(body));
    } catch (error) {
      const apiError = toApiError(error);
      if (apiError.type === 'InternalServerErrorException') console.error('[data-api] Internal error:', error);
      reply(res, apiError.status, { message: apiError.message }, apiError.type);
    }
  }

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      console.error('[data-api] Internal error:', error);
      if (!res.headersSent) reply(res, 500, { message: '' }, 'InternalServerErrorException');
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    calls,
    pause({ calls: count = 0, ms = 0 }) {
      paused = { calls: count, until: ms > 0 ? Date.now() + ms : 0 };
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      for (const id of [...transactions.keys()]) await endTransaction(id, 'ROLLBACK').catch(() => undefined);
      await Promise.all([...pools.values()].map((pool) => pool.end()));
    },
  };
}

/** The local cluster's ARN and the secrets of the roles `npm start` connects as in data-api mode. */
const localClusterArn = 'arn:aws:rds:local:000000000000:cluster:logbook-local';
const localSecrets = {
  app: {
    arn: 'arn:aws:secretsmanager:local:000000000000:secret:logbook-app',
    urlVariable: 'APP_DATABASE_URL',
    secretVariable: 'APP_DB_SECRET_ARN',
  },
  auditAdmin: {
    arn: 'arn:aws:secretsmanager:local:000000000000:secret:logbook-audit-admin',
    urlVariable: 'AUDIT_ADMIN_DATABASE_URL',
    secretVariable: 'AUDIT_ADMIN_DB_SECRET_ARN',
  },
};

/**
 * `npm start` with LOGBOOK_DB_DRIVER=data-api: starts the local Data API (DATA_API_PORT, else any free port) in
 * front of the database of APP_DATABASE_URL, with one secret per role login of the environment, and sets the
 * variables with which shared/db/client.ts connects through it, as in Lambda.
 */
export async function useLocalDataApi(): Promise<RunningDataApiServer> {
  const logins = Object.values(localSecrets).map((role) => {
    const url = process.env[role.urlVariable];
    if (!url) throw new Error(`${role.urlVariable} is not set`);
    return { ...role, url: new URL(url) };
  });
  const app = logins[0]!.url;
  const server = await startDataApiServer({
    serverUrl: app.toString(),
    resourceArn: localClusterArn,
    secrets: Object.fromEntries(
      logins.map(({ arn, url }) => [
        arn,
        { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) },
      ]),
    ),
    port: Number(process.env.DATA_API_PORT ?? 0),
    // The Data API ends a call after 45 s (the statement cancelled, unless continueAfterTimeout).
    callTimeoutMs: 45_000,
  });
  Object.assign(process.env, {
    DB_CLUSTER_ARN: localClusterArn,
    DB_NAME: decodeURIComponent(app.pathname.slice(1)) || 'postgres',
    DATA_API_ENDPOINT: server.url,
    ...Object.fromEntries(logins.map(({ secretVariable, arn }) => [secretVariable, arn])),
  });
  return server;
}
