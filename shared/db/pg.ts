import pg from 'pg';
import {
  type Db,
  encodeParam,
  type Isolation,
  type Params,
  parseNamedParams,
  type QueryResult,
  type Row,
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
  const result = await client.query<T>(text, values);
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

function clientDb(client: pg.PoolClient): Db {
  return {
    query: (sql, params) => run(client, sql, params),
    transaction: () => Promise.reject(new Error('nested transactions are not supported')),
    close: async () => undefined,
  };
}

export interface PgDbOptions {
  connectionString: string;
  max?: number;
  /** Name shown in pg_stat_activity. */
  applicationName?: string;
}

/** The node-postgres executor of `Db`, used locally and in tests. Sessions run in UTC. */
export function createPgDb(options: PgDbOptions): Db & { pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'logbook',
    options: '-c TimeZone=UTC',
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return {
    pool,
    query: (sql, params) => run(pool, sql, params),
    async transaction<T>(fn: (tx: Db) => Promise<T>, opts?: { isolation?: Isolation }) {
      const client = await pool.connect();
      try {
        await client.query(opts?.isolation ? `BEGIN ISOLATION LEVEL ${opts.isolation}` : 'BEGIN');
        const result = await fn(clientDb(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
