import pg from 'pg';
import {
  type Db,
  encodeParam,
  type Isolation,
  openTx,
  type Params,
  parseNamedParams,
  preparedName,
  type QueryResult,
  type Row,
  type Tx,
} from './db.ts';

// int8 (count(*), bigserial) as a JS number: every int8 of this schema is a count or a sequence far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

const translated = new Map<string, { text: string; names: string[] }>();

/** Translates `:name` parameters to `$n`, cached per statement text. */
function translate(sql: string): { text: string; names: string[] } {
  let hit = translated.get(sql);
  if (!hit) {
    const { parts, names } = parseNamedParams(sql);
    const order: string[] = [];
    let text = parts[0]!;
    names.forEach((name, index) => {
      let position = order.indexOf(name);
      if (position === -1) position = order.push(name) - 1;
      text += `$${position + 1}${parts[index + 1]}`;
    });
    hit = { text, names: order };
    translated.set(sql, hit);
  }
  return hit;
}

/** SQLSTATE connection_failure: what callers see of a connection lost or never made (503, shared/http/error-envelope.ts). */
export const connectionFailure = '08006';

/**
 * node-postgres reports a lost connection ("Connection terminated unexpectedly", a connect timeout, a client no
 * longer queryable) as an Error without a SQLSTATE; it becomes a connection failure. Errors from the server keep theirs.
 */
function asConnectionFailure(error: unknown): unknown {
  if (!(error instanceof Error) || typeof (error as { code?: unknown }).code === 'string') return error;
  return Object.assign(new Error(`database connection lost: ${error.message}`, { cause: error }), {
    code: connectionFailure,
  });
}

async function run<T extends Row>(
  client: pg.Pool | pg.PoolClient,
  sql: string,
  params: Params = {},
): Promise<QueryResult<T>> {
  const { text, names } = translate(sql);
  const values = names.map((name) => {
    if (!(name in params)) throw new Error(`missing SQL parameter :${name}`);
    return encodeParam(params[name]);
  });
  try {
    const name = preparedName(sql);
    const result = await client.query<T>(name ? { name, text, values } : { text, values });
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } catch (error) {
    throw asConnectionFailure(error);
  }
}

/** The connection error each pool client heard, if any: recorded from the moment the pool connected it. */
const lostConnections = new WeakMap<pg.Client, Error>();

/**
 * Every client of the pool is heard from its connect on, not from when its caller resumes: a client that reads its
 * ready message and its backend's termination (57P01) in one socket read emits 'error' before any awaited
 * `pool.connect()` returns, and an 'error' without a listener ends the process. Errors of idle clients are heard too
 * (the pool discards those clients and connects anew).
 */
export function hearPoolErrors(pool: pg.Pool): void {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      lostConnections.set(client, error);
    });
  });
}

export interface PgDbOptions {
  connectionString: string;
  max?: number;
  /** Name shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * How long a connect may take, and a statement may run, before it fails. 0: no limit. Defaults: shared/db/timeouts.ts.
   */
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
}

/** The node-postgres executor of `Db`, used locally and in tests. Sessions run in UTC. */
export function createPgDb(options: PgDbOptions): Db & { pool: pg.Pool } {
  const statementTimeoutMs = options.statementTimeoutMs ?? 0;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'logbook',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 0,
    // The server enforces it, so a statement stuck behind a lock or a frozen backend is cancelled and rolled back.
    options: `-c TimeZone=UTC${statementTimeoutMs > 0 ? ` -c statement_timeout=${statementTimeoutMs}` : ''}`,
    // A frozen server (SIGSTOP) never answers: the client gives up a little after the server would have.
    ...(statementTimeoutMs > 0 && { query_timeout: statementTimeoutMs + 2_000 }),
  });
  hearPoolErrors(pool);
  return {
    pool,
    query: (sql, params) => run(pool, sql, params),
    async transaction<T>(fn: (tx: Tx) => Promise<T>, opts?: { isolation?: Isolation }) {
      const client = await pool.connect().catch((error: unknown) => {
        throw asConnectionFailure(error);
      });
      // A backend terminated while the transaction waits between statements fails the transaction (heard since
      // the client connected, hearPoolErrors).
      let lost = lostConnections.get(client);
      try {
        await run(client, opts?.isolation ? `BEGIN ISOLATION LEVEL ${opts.isolation}` : 'BEGIN');
        const { tx, committed, commitUnknown } = openTx({ query: (sql, params) => run(client, sql, params) });
        const result = await fn(tx);
        lost ??= lostConnections.get(client);
        if (lost) throw asConnectionFailure(lost);
        await run(client, 'COMMIT').catch((error: unknown) => {
          commitUnknown();
          throw error;
        });
        committed();
        return result;
      } catch (error) {
        const code = String((error as { code?: unknown }).code ?? '');
        // A connection lost, or its backend terminated (57P01..57P03), is not rolled back but discarded.
        if (code.startsWith('08') || code.startsWith('57P')) lost ??= error as Error;
        lost ??= lostConnections.get(client);
        if (!lost) await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        // A client whose connection failed is destroyed, not returned to the pool.
        client.release(lost);
      }
    },
    close: () => pool.end(),
  };
}
