/**
 * The one database interface of the project.
 *
 * SQL is written with named parameters (`:orgId::uuid`) and an explicit cast on
 * every parameter, so the same text runs on the RDS Data API (which takes named
 * parameters natively) and on node-postgres (which gets them translated to $n).
 * No array parameters: batches travel as one JSON parameter.
 */
export type SqlValue = string | number | boolean | null | Date | SqlJson;
type SqlJson = { [key: string]: unknown } | unknown[];
export type Params = Record<string, SqlValue | undefined>;

export type Row = Record<string, unknown>;

export interface QueryResult<T extends Row = Row> {
  rows: T[];
  rowCount: number;
}

export type Isolation = 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';

/** The Data API's results are paged under its 1 MiB response limit (1,048,576 bytes), with room for their framing. */
export const dataApiMaxResultBytes = 1_000_000;

export interface Db {
  /** Runs one statement. */
  query<T extends Row = Row>(sql: string, params?: Params): Promise<QueryResult<T>>;
  /** Runs `fn` in one transaction; rolls back when it throws. */
  transaction<T>(fn: (tx: Tx) => Promise<T>, options?: { isolation?: Isolation }): Promise<T>;
  close(): Promise<void>;
  /**
   * About how many bytes one result may hold (the Data API's 1 MiB response limit), for readers of many rows to
   * page under; undefined: no limit (node-postgres).
   */
  readonly maxResultBytes?: number;
}

/** The Db of one open transaction. */
export interface Tx extends Db {
  /**
   * Calls `fn` once the transaction has committed, before `transaction` returns; never when it rolls back. What a
   * change owes after its commit (sealing its audit rows) hangs here, so it cannot run for a change that did not commit.
   */
  afterCommit(fn: () => void): void;
  /**
   * Calls `fn` when the COMMIT was sent and failed (a lost connection, a database that froze and never answered):
   * the client cannot tell whether it committed, and the change may land after the caller was answered.
   */
  ifCommitUnknown(fn: () => void): void;
}

/** The Tx of an executor's transaction: its statements, and the calls to make once its COMMIT succeeded or failed. */
export function openTx(db: Omit<Db, 'transaction' | 'close'>): {
  tx: Tx;
  committed: () => void;
  commitUnknown: () => void;
} {
  const onCommit: (() => void)[] = [];
  const onUnknown: (() => void)[] = [];
  const tx: Tx = {
    ...db,
    query: db.query,
    transaction: () => Promise.reject(new Error('nested transactions are not supported')),
    close: async () => undefined,
    afterCommit: (fn) => {
      onCommit.push(fn);
    },
    ifCommitUnknown: (fn) => {
      onUnknown.push(fn);
    },
  };
  const run = (calls: (() => void)[]) => () => {
    for (const fn of calls.splice(0)) fn();
  };
  return { tx, committed: run(onCommit), commitUnknown: run(onUnknown) };
}

const preparedNames = new Map<string, string>();

/**
 * Marks a statement text for a named prepared statement: node-postgres parses and plans it once per connection
 * instead of on every call (the Data API, which has no such statements, runs it as it is). Only for hot statements
 * whose plan does not depend on their parameters.
 */
export function prepared(name: string, sql: string): string {
  preparedNames.set(sql, name);
  return sql;
}

/** The prepared statement name of a statement text, if it has one. */
export const preparedName = (sql: string) => preparedNames.get(sql);

/** First row or undefined. */
export async function one<T extends Row>(db: Db, sql: string, params?: Params): Promise<T | undefined> {
  return (await db.query<T>(sql, params)).rows[0];
}

/** Encodes a parameter value the way both executors pass it: JSON values as text, dates as ISO text. */
export function encodeParam(value: SqlValue | undefined): string | number | boolean | null {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

/**
 * Finds the `:name` parameters of a statement, skipping quoted strings,
 * quoted identifiers, dollar-quoted bodies, comments and `::` casts.
 * Returns the statement text split around them. Array slices are written with
 * spaces (`arr[lo : hi]`) so that `:hi` is not read as a parameter.
 */
export function parseNamedParams(sql: string): { parts: string[]; names: string[] } {
  const parts: string[] = [];
  const names: string[] = [];
  let last = 0;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      // E'...' strings allow backslash escapes of the quote.
      const escapes = c === "'" && /[Ee]/.test(sql[i - 1] ?? '') && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? '');
      let end = i + 1;
      while (end < n && sql[end] !== c) end += escapes && sql[end] === '\\' ? 2 : 1;
      i = end + 1;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? n : end + 2;
      continue;
    }
    if (c === '$') {
      const tag = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        i = end === -1 ? n : end + tag[0].length;
        continue;
      }
    }
    if (c === ':') {
      if (sql[i + 1] === ':') {
        i += 2;
        continue;
      }
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1));
      if (name) {
        parts.push(sql.slice(last, i));
        names.push(name[0]);
        i += 1 + name[0].length;
        last = i;
        continue;
      }
    }
    i += 1;
  }
  parts.push(sql.slice(last));
  return { parts, names };
}
