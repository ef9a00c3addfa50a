import { createHash } from 'node:crypto';
import { DomainError, ValidationFailed } from '../errors.ts';
import { type Db, one } from './db.ts';

/**
 * The tables that keep the first reply to a request sent with an Idempotency-Key (0004_audit_ingest.sql,
 * 0014_agent_log_ingest_requests.sql): same columns, one per route family.
 */
export type IdempotencyTable = 'audit_ingest_requests' | 'agent_log_ingest_requests';

/** Who sent the request with which key, and the hash of its body. */
interface IdempotencyClaim {
  principalType: string;
  principalId: string;
  key: string;
  requestHash: string;
}

/** The Idempotency-Key header: 1 to 255 printable ASCII characters, or absent; a 400 naming the header otherwise. */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (/^[\x20-\x7e]{1,255}$/.test(header)) return header;
  throw ValidationFailed('Invalid Idempotency-Key header', [
    { path: 'headers.idempotency-key', message: 'Give 1 to 255 printable ASCII characters', code: 'invalid_format' },
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
 * Inside `db.transaction`: claims the principal's key for this request (a new key, or one older than 24 hours,
 * replaced in place) and runs `work`, storing its reply before the transaction commits; or returns the reply stored
 * under the key. A concurrent claim of the same key waits on the primary key until the first commits, then finds its
 * reply; 409 IDEMPOTENCY_KEY_REUSED when the key came with another body.
 */
export async function onceForKey<R extends Record<string, unknown>>(
  tx: Db,
  table: IdempotencyTable,
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
    if (stored!.requestHash !== claim.requestHash)
      throw new DomainError(
        'IDEMPOTENCY_KEY_REUSED',
        'This Idempotency-Key came with another request body within the last 24 hours; use a new key',
      );
    return stored!.response;
  }
  const response = await work();
  await tx.query(`UPDATE ${table} SET status = 201, response = :response::jsonb WHERE ${where}`, {
    ...owner,
    response,
  });
  return response;
}
