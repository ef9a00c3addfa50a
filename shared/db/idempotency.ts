import { AsyncLocalStorage } from 'node:async_hooks';
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { DomainError, ValidationFailed } from '../errors.ts';
import { logger } from '../logger.ts';
import { type Db, type Isolation, one, type Params, type Tx } from './db.ts';

/**
 * The tables of idempotency keys the daily retention run purges: the API's (idempotency_keys,
 * 0062_idempotency_keys.sql) and the replays of spooled audit rows (audit_ingest_requests, 0004_audit_ingest.sql).
 */
export type IdempotencyTable = 'audit_ingest_requests' | 'idempotency_keys';

/** Who sent the request with which key, and the hash of its body. */
interface IdempotencyClaim {
  principalType: string;
  principalId: string;
  key: string;
  requestHash: string;
}

/**
 * The Idempotency-Key header: 1 to 255 visible ASCII characters (spaces only between them), or absent; a 400 naming
 * the header otherwise.
 */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (header.length <= 255 && /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(header)) return header;
  throw ValidationFailed('Invalid Idempotency-Key header', [
    {
      path: 'headers.idempotency-key',
      message: 'Give 1 to 255 visible ASCII characters (spaces only between them)',
      code: 'invalid_format',
    },
  ]);
}

/** SHA-256 of a validated body with its object keys sorted, so a retry matches however its JSON was ordered. */
export function requestHash(body: unknown): string {
  const sorted = JSON.stringify(body, (_, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
  return createHash('sha256').update(sorted).digest('hex');
}

/**
 * Inside `db.transaction`, for work that is no request of the API (a spooled audit row replayed from the work queue):
 * claims the principal's key (a new key, or one older than 24 hours, replaced in place) and runs `work`, storing its
 * reply before the transaction commits; or returns the reply stored under the key. A concurrent claim of the same key
 * waits on the primary key until the first commits, then finds its reply; 422 IDEMPOTENCY_KEY_REUSED when the key
 * came with another body.
 */
export async function onceForKey<R extends Record<string, unknown>>(
  tx: Db,
  table: 'audit_ingest_requests',
  claim: IdempotencyClaim,
  work: () => Promise<R>,
): Promise<R> {
  const where = `principal_type = :principalType::text AND principal_id = :principalId::uuid AND idempotency_key = :key::text`;
  const claimed = await one(
    tx,
    `INSERT INTO ${table} AS r (principal_type, principal_id, idempotency_key, request_hash)
     VALUES (:principalType::text, :principalId::uuid, :key::text, :requestHash::text)
     ON CONFLICT (principal_type, principal_id, idempotency_key) DO UPDATE
        SET request_hash = excluded.request_hash, status = NULL, response = NULL, created_at = now()
      WHERE r.created_at < now() - interval '24 hours'
     RETURNING true AS claimed`,
    { ...claim },
  );
  const owner = { principalType: claim.principalType, principalId: claim.principalId, key: claim.key };
  if (!claimed) {
    const stored = await one<{ requestHash: string; response: R }>(
      tx,
      `SELECT request_hash AS "requestHash", response FROM ${table} WHERE ${where}`,
      owner,
    );
    if (stored!.requestHash !== claim.requestHash) throw keyReused(claim.key);
    return stored!.response;
  }
  const response = await work();
  await tx.query(`UPDATE ${table} SET status = 201, response = :response::jsonb WHERE ${where}`, {
    ...owner,
    response,
  });
  return response;
}

/** 422: the key was used within 24 hours for another request (another body, path or query), named in the message. */
const keyReused = (key: string) =>
  new DomainError(
    'IDEMPOTENCY_KEY_REUSED',
    `Idempotency-Key "${key}" was used within the last 24 hours for another request; use a new key`,
    [{ path: 'headers.idempotency-key', message: 'Already used for another request', code: 'idempotency_key_reused' }],
  );

/** 409: the first request with the key has not answered yet (or ended after its change without a reply). */
export const keyInFlight = (key: string) =>
  new DomainError(
    'IDEMPOTENCY_KEY_IN_FLIGHT',
    `A request with Idempotency-Key "${key}" is still being processed; retry after it has answered`,
    [
      {
        path: 'headers.idempotency-key',
        message: 'A request with this key is in flight',
        code: 'idempotency_key_in_flight',
      },
    ],
  );

/** A reply as the API sent it, to replay. */
export interface StoredReply {
  statusCode: number;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
}

/** A request of the API sent with an Idempotency-Key, as its database calls see it (keyedRequestDb). */
export interface KeyedRequest {
  /** Whose key: user, api_key, agent or enrollment_key, and its id. */
  principalType: string;
  principalId: string;
  key: string;
  /** requestHash of method, path, query and body. */
  requestHash: string;
  /** A transaction of this request claimed the key: committed, or still open as `held`. */
  claimed: boolean;
  /** The claiming transaction, kept open until the reply is known or the request runs another statement. */
  held?: HeldTransaction;
  /** The reply is known: work the request left running claims nothing any more. */
  ended?: boolean;
  /** The reply the route answers with a value (the handler's): a statement that claims the key stores it (claimInStatement). */
  replyOf?: (answer: unknown) => StoredReply;
  /** The statement that claimed the key stored the reply with the change: finishKeyed stores nothing more. */
  replied?: boolean;
}

const rollback = Symbol('rollback');
type Outcome = StoredReply | null | typeof rollback;

interface HeldTransaction {
  /** A reply: stored, then COMMIT; null: COMMIT; rollback: ROLLBACK. */
  settle: (outcome: Outcome) => void;
  done: Promise<void>;
}

/** Thrown in the claiming transaction when the key was claimed and committed by another request meanwhile. */
export class KeyTaken extends Error {
  constructor() {
    super('The Idempotency-Key was claimed by another request');
    this.name = 'KeyTaken';
  }
}

const keyedRequests = new AsyncLocalStorage<KeyedRequest>();

/** Runs `fn` as the keyed request `request`: the Db of keyedRequestDb claims its key in its first transaction. */
export const runKeyed = <T>(request: KeyedRequest, fn: () => Promise<T>): Promise<T> => keyedRequests.run(request, fn);

/** Runs `fn` outside any keyed request: for work a request starts that is not its change (its audit writes). */
const outsideKeyedRequest = <T>(fn: () => Promise<T>): Promise<T> => keyedRequests.exit(fn);

/** The unkeyed Db of each Db, made once: writes grouped per executor (the audit seals) find each other's. */
const unkeyed = new WeakMap<Db, Db>();

/** A Db whose calls run outside any keyed request (the audit context's: audit writes never claim a key). */
export function unkeyedDb(db: Db): Db {
  let outside = unkeyed.get(db);
  if (!outside) {
    outside = {
      query: (sql, params) => outsideKeyedRequest(() => db.query(sql, params)),
      transaction: (fn, options) => outsideKeyedRequest(() => db.transaction(fn, options)),
      close: () => db.close(),
      maxResultBytes: db.maxResultBytes,
    };
    unkeyed.set(db, outside);
  }
  return outside;
}

/**
 * The API's Db (shared/db/client.ts appDb). Outside a keyed request it is `db`. Inside one, the request's first
 * transaction (or first statement that changes rows, run in a transaction of its own) claims the key before its work (409 while another request holds it), and is kept open after its work
 * until the request's reply is known, so the reply is stored and committed with the change: a client that gave up
 * and retries finds either nothing (and the request runs again) or the change with its reply, never the change alone.
 * Any later statement of the request commits it first, and the reply is then stored after. A change of one statement
 * may claim the key itself instead (claimInStatement): no transaction is opened around it.
 */
export function keyedRequestDb(db: Db): Db {
  return {
    query: async (sql, params) => {
      const request = keyedRequests.getStore();
      if (request?.held) await commitHeld(request);
      // A change made by one statement outside a transaction claims the key in a transaction of its own.
      if (request && !request.claimed && !request.ended && writes(sql))
        return claimingTransaction(db, request, (tx) => tx.query(sql, params), undefined);
      return db.query(sql, params);
    },
    transaction: async (fn, options) => {
      const request = keyedRequests.getStore();
      if (request?.held) await commitHeld(request);
      if (!request || request.claimed || request.ended) return db.transaction(fn, options);
      return claimingTransaction(db, request, fn, options);
    },
    close: () => db.close(),
    maxResultBytes: db.maxResultBytes,
  };
}

/** A statement that changes rows: INSERT, UPDATE, DELETE or MERGE, alone or in a WITH. */
const writes = (sql: string) =>
  /^\s*(?:INSERT|UPDATE|DELETE|MERGE)\b|^\s*WITH\b[\s\S]*\b(?:INSERT|UPDATE|DELETE)\b/i.test(sql);

/** Commits the request's held transaction; its failure (the database unavailable) fails the statement that waits. */
async function commitHeld(request: KeyedRequest): Promise<void> {
  const held = request.held;
  if (!held) return;
  request.held = undefined;
  held.settle(null);
  await held.done;
}

function claimingTransaction<T>(
  db: Db,
  request: KeyedRequest,
  fn: (tx: Tx) => Promise<T>,
  options: { isolation?: Isolation } | undefined,
): Promise<T> {
  request.claimed = true;
  return new Promise<T>((resolve, reject) => {
    let handedOver = false;
    let settle!: (outcome: Outcome) => void;
    const outcome = new Promise<Outcome>((r) => {
      settle = r;
    });
    const held: HeldTransaction = { settle, done: Promise.resolve() };
    const run = db.transaction(async (tx) => {
      await claimKey(tx, request);
      const value = await fn(tx);
      request.held = held;
      handedOver = true;
      resolve(value);
      const decided = await outcome;
      if (decided === rollback) throw rollback;
      if (decided) await storeReply(tx, request, decided);
    }, options);
    held.done = run.then(
      () => undefined,
      (error: unknown) => {
        if (request.held === held) request.held = undefined;
        // Rolled back before its work was handed over: the claim went with it, so a later transaction claims again.
        if (!handedOver) {
          request.claimed = false;
          reject(error);
        }
        throw error;
      },
    );
    // A rollback that was asked for has nobody waiting on it: observed here, never an unhandled rejection.
    held.done.catch(() => undefined);
  });
}

/**
 * Ends a keyed request once its reply is known (`failed`: an error reply). Its claiming transaction still open: the
 * reply is stored in it and committed (a failed COMMIT is thrown, to be answered instead), or a failed request is
 * rolled back with its change. Its claim committed earlier: the reply is stored after, unless it is a 5xx (a retry
 * then hears 409, never a second change). Never claimed: a success is kept under a new claim; a failure is not
 * (it changed nothing, so a retry runs again).
 */
export async function finishKeyed(db: Db, request: KeyedRequest, reply: StoredReply, failed: boolean): Promise<void> {
  request.ended = true;
  if (request.replied) return;
  const held = request.held;
  if (held) {
    request.held = undefined;
    held.settle(failed ? rollback : reply);
    return failed ? held.done.catch(() => undefined) : held.done;
  }
  try {
    if (request.claimed) {
      if (reply.statusCode < 500) await storeReply(db, request, reply);
    } else if (!failed) await insertAnsweredKey(db, request, reply);
  } catch (error) {
    logger.error('[idempotency] Could not store the reply of a keyed request', {
      principalType: request.principalType,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

/** A key's row as storedAnswer reads it (or the agent's token lookup, in the same statement). */
export type StoredKey = { requestHash: string; reply: string | null };

/** The row (StoredKey) of the key `where` names, when it was claimed within 24 hours. */
function storedKeySql(where: string): string {
  return `SELECT request_hash AS "requestHash", reply FROM idempotency_keys
           WHERE ${where} AND created_at > now() - interval '24 hours'`;
}

/**
 * The row of an agent's key within 24 hours, as an SQL expression over the agent `a` and :keyDigest (keyDigestOf):
 * read by the token lookup of a keyed agent request (shared/auth/store.ts), instead of a statement of its own.
 */
export const agentKeySql = `(SELECT to_jsonb(k) FROM (${storedKeySql(
  "principal_type = 'agent' AND principal_id = a.id::text AND idempotency_key = :keyDigest::text",
)}) k)`;

/** How a key is stored: its SHA-256, never the key itself (it seals the reply). */
export const keyDigestOf = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * What the key holds for its caller: nothing (or a key older than 24 hours), the first reply, or 422 or 409. `read`:
 * the key's row when it was read already (null: none), so no statement reads it again.
 */
export async function storedAnswer(
  db: Db,
  request: KeyedRequest,
  read?: StoredKey | null,
): Promise<StoredReply | undefined> {
  const stored = read !== undefined ? read : await one<StoredKey>(db, storedKeySql(keyWhere), keyParams(request));
  if (!stored) return undefined;
  if (stored.requestHash !== request.requestHash) throw keyReused(request.key);
  if (stored.reply === null) throw keyInFlight(request.key);
  return openReply(request.key, stored.reply);
}

const keyWhere =
  'principal_type = :principalType::text AND principal_id = :principalId::text AND idempotency_key = :keyDigest::text';

const keyParams = (request: KeyedRequest) => ({
  principalType: request.principalType,
  principalId: request.principalId,
  keyDigest: keyDigestOf(request.key),
});

/**
 * Claims the key in the request's transaction: a transaction lock on it (another request holding it: 409 at once,
 * no wait), then its row, new or replacing one older than 24 hours. A row already there was committed by an earlier
 * request with the key: KeyTaken, and the caller answers from it.
 */
async function claimKey(tx: Db, request: KeyedRequest): Promise<void> {
  const params = keyParams(request);
  const result = await one<{ locked: boolean; claimed: boolean }>(
    tx,
    `WITH ${keyLockSql},
     claim AS (
       INSERT INTO idempotency_keys AS k (principal_type, principal_id, idempotency_key, request_hash)
       SELECT :principalType::text, :principalId::text, :keyDigest::text, :requestHash::text FROM key_lock WHERE locked
       ON CONFLICT (principal_type, principal_id, idempotency_key) DO UPDATE
          SET request_hash = excluded.request_hash, reply = NULL, created_at = now()
        WHERE k.created_at <= now() - interval '24 hours'
       RETURNING 1
     )
     SELECT (SELECT locked FROM key_lock) AS locked, EXISTS (SELECT 1 FROM claim) AS claimed`,
    { ...params, requestHash: request.requestHash, lockKey: lockKeyOf(params) },
  );
  if (!result!.locked) throw keyInFlight(request.key);
  if (!result!.claimed) throw new KeyTaken();
}

/** The key's transaction lock, `key_lock.locked`: false while another request holds it (in flight). Parameter :lockKey. */
const keyLockSql = 'key_lock AS (SELECT pg_try_advisory_xact_lock(2, :lockKey::int) AS locked)';

const lockKeyOf = (params: ReturnType<typeof keyParams>) =>
  createHash('sha256')
    .update(`${params.principalType}\0${params.principalId}\0${params.keyDigest}`)
    .digest()
    .readInt32BE(0);

/**
 * The key's claim as CTEs of the statement that makes the request's change, so no transaction is opened around it: the
 * statement starts with `key_lock` (claimKey's lock; not taken: the change is not made, and the request hears 409),
 * gates its change on `(SELECT locked FROM key_lock)`, and adds `renewed` and `claimed`, the key's row with the sealed
 * reply, where `gate` holds (an SQL condition that the change was made). A row of the key older than 24 hours is
 * renewed; else it is inserted, and a row within 24 hours (another request with the key committed it meanwhile) fails
 * the whole statement with a unique violation: the change is not kept, and the request answers from that row
 * (claimInStatement). Parameters: keyClaimParams.
 */
export const keyClaimSql = (gate: string) => ({
  lock: keyLockSql,
  row: `renewed AS (
       UPDATE idempotency_keys SET request_hash = :requestHash::text, reply = :reply::text, created_at = now()
        WHERE ${keyWhere} AND created_at <= now() - interval '24 hours' AND ${gate}
       RETURNING 1
     ), claimed AS (
       INSERT INTO idempotency_keys (principal_type, principal_id, idempotency_key, request_hash, reply)
       SELECT :principalType::text, :principalId::text, :keyDigest::text, :requestHash::text, :reply::text
        WHERE ${gate} AND NOT EXISTS (SELECT FROM renewed)
       RETURNING 1
     )`,
  /** The answer claimInStatement reads: whether the lock was taken, and the key claimed. */
  columns: `(SELECT locked FROM key_lock) AS locked, EXISTS (SELECT FROM claimed) OR EXISTS (SELECT FROM renewed) AS claimed`,
});

/** The parameters of keyClaimSql: the key's owner, digest, lock and request hash, and `reply` sealed. */
const keyClaimParams = (request: KeyedRequest, reply: StoredReply) => {
  const params = keyParams(request);
  return {
    ...params,
    requestHash: request.requestHash,
    lockKey: lockKeyOf(params),
    reply: sealReply(request.key, reply),
  };
};

/**
 * The keyed request the caller runs in, when its change may claim its key in its own statement (claimInStatement):
 * undefined outside one, once its key is claimed or its reply known, or when its route gave no replyOf.
 */
export function requestToClaim(): KeyedRequest | undefined {
  const request = keyedRequests.getStore();
  return request?.replyOf && !request.claimed && !request.ended ? request : undefined;
}

/**
 * Runs `change`, the one statement that makes the request's change and claims its key with the reply of `answer`
 * (keyClaimSql, given its parameters), as it is: keyedRequestDb opens no claiming transaction around it. Claimed, the
 * request is done with its key (its reply stored, finishKeyed stores nothing more); the lock not taken is 409; a unique
 * violation of the key's row (claimed and committed by another request meanwhile) is KeyTaken, answered from that row.
 */
export async function claimInStatement<T extends { locked: boolean; claimed: boolean }>(
  request: KeyedRequest,
  answer: unknown,
  change: (params: Params) => Promise<T>,
): Promise<T> {
  const reply = request.replyOf!(answer);
  request.claimed = true;
  try {
    const result = await change(keyClaimParams(request, reply));
    if (!result.locked) throw keyInFlight(request.key);
    request.replied = result.claimed;
    return result;
  } catch (error) {
    if (keyRowTaken(error)) throw new KeyTaken();
    throw error;
  } finally {
    // Not claimed (refused, or failed whole): a later change of the request claims the key again.
    if (!request.replied) request.claimed = false;
  }
}

/** A unique violation of a key's row, from either executor (node-postgres names the constraint; the Data API's message does). */
const keyRowTaken = (error: unknown) => {
  const { code, constraint, message } = (error ?? {}) as { code?: unknown; constraint?: unknown; message?: unknown };
  return (
    code === '23505' && (constraint ?? /constraint "([^"]+)"/.exec(String(message))?.[1]) === 'idempotency_keys_pkey'
  );
};

async function storeReply(db: Db, request: KeyedRequest, reply: StoredReply): Promise<void> {
  await db.query(`UPDATE idempotency_keys SET reply = :reply::text WHERE ${keyWhere} AND reply IS NULL`, {
    ...keyParams(request),
    reply: sealReply(request.key, reply),
  });
}

async function insertAnsweredKey(db: Db, request: KeyedRequest, reply: StoredReply): Promise<void> {
  await db.query(
    `INSERT INTO idempotency_keys (principal_type, principal_id, idempotency_key, request_hash, reply)
     VALUES (:principalType::text, :principalId::text, :keyDigest::text, :requestHash::text, :reply::text)
     ON CONFLICT (principal_type, principal_id, idempotency_key) DO NOTHING`,
    { ...keyParams(request), requestHash: request.requestHash, reply: sealReply(request.key, reply) },
  );
}

/**
 * The key that seals a reply, derived from the Idempotency-Key, which is not stored: a reply can hold a secret shown
 * once (an API key, an agent token), and only the caller who knows the key can open it.
 */
const replyKey = (key: string) => Buffer.from(hkdfSync('sha256', key, 'logbook idempotent reply', 'aes-256-gcm', 32));

function sealReply(key: string, reply: StoredReply): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', replyKey(key), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(reply), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

function openReply(key: string, sealed: string): StoredReply {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', replyKey(key), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8'));
}
