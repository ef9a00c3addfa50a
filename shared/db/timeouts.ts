/**
 * Database timeouts, from the environment, the same intent for both executors: a request that cannot get
 * an answer from the database in time fails with 503 UNAVAILABLE and Retry-After, and whatever it started is rolled
 * back, so a client that retries never finds its first attempt committed later.
 *
 * - DB_CONNECT_TIMEOUT_MS (default 5,000): opening a connection (node-postgres).
 * - DB_STATEMENT_TIMEOUT_MS (default 20,000): one statement, enforced by the server (statement_timeout) and, for a
 *   server that stopped answering, by the client 2 s later. Under the Data API (shared/db/data-api.ts): the API
 *   role's statements are bounded by its default (ALTER ROLE logbook_app SET statement_timeout, shared/db/roles.ts,
 *   set with its login), another role's transactions start with SET LOCAL statement_timeout, and each call is abandoned
 *   2 s past the timeout (the Data API itself ends a call after 45 s). Below API Gateway's 30 s, so the caller hears a
 *   503, not a 504.
 */
interface DbTimeouts {
  connectTimeoutMs: number;
  statementTimeoutMs: number;
}

const setting = (name: string, fallback: number): number => {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number of milliseconds (0: no limit)`);
  return n;
};

export function dbTimeouts(): DbTimeouts {
  return {
    connectTimeoutMs: setting('DB_CONNECT_TIMEOUT_MS', 5_000),
    statementTimeoutMs: setting('DB_STATEMENT_TIMEOUT_MS', 20_000),
  };
}
