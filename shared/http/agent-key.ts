import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { parseIdempotencyKey, type StoredKey } from '../db/idempotency.ts';

/** What an agent's key held, read with its token by the authentication (authenticate.ts), by the principal it made. */
const keysReadWithToken = new WeakMap<object, { key: string; stored: StoredKey | null }>();

/** The Idempotency-Key of a POST when it is a valid one, else undefined (the idempotency middleware answers 400). */
export function postKeyOf(event: APIGatewayProxyEventV2): string | undefined {
  if (event.requestContext.http.method !== 'POST') return undefined;
  try {
    return parseIdempotencyKey(event.headers?.['idempotency-key']);
  } catch {
    return undefined;
  }
}

/** Keeps what the caller's key held, read in its authentication's statement. */
export function keyReadWithToken(caller: object, key: string, stored: StoredKey | null): void {
  keysReadWithToken.set(caller, { key, stored });
}

/** What the caller's `key` held when its authentication read it (null: nothing), or undefined when it was not read. */
export function keyReadWith(caller: object, key: string): StoredKey | null | undefined {
  const read = keysReadWithToken.get(caller);
  return read?.key === key ? read.stored : undefined;
}
