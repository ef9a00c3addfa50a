import { createHash } from 'node:crypto';
import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { appDb } from '../db/client.ts';
import {
  finishKeyed,
  type KeyedRequest,
  KeyTaken,
  keyInFlight,
  parseIdempotencyKey,
  requestHash,
  runKeyed,
  type StoredReply,
  storedAnswer,
} from '../db/idempotency.ts';
import { keyReadWith } from './agent-key.ts';
import type { Caller } from './authenticate.ts';
import { toErrorReply } from './error-envelope.ts';
import type { ValidatedContext } from './validate.ts';

export interface KeyedHttpContext extends ValidatedContext {
  /** The request's Idempotency-Key and owner, when it came with one the request has not used yet. */
  keyed?: KeyedRequest;
}

/**
 * Whose key it is: the caller's, or for enrollment (no caller yet) the enrollment key's; undefined when the request
 * has no owner to scope a key by.
 */
function ownerOf(caller: Caller | undefined, body: unknown) {
  if (caller?.actorType === 'agent') return { principalType: 'agent', principalId: caller.agentId };
  if (caller) return { principalType: caller.actorType, principalId: caller.id };
  const enrollmentKey = (body as { enrollmentKey?: unknown } | null)?.enrollmentKey;
  if (typeof enrollmentKey !== 'string') return undefined;
  return { principalType: 'enrollment_key', principalId: createHash('sha256').update(enrollmentKey).digest('hex') };
}

const replayed = (reply: StoredReply): APIGatewayProxyStructuredResultV2 => ({
  ...reply,
  headers: { ...reply.headers, 'idempotent-replayed': 'true' },
});

/**
 * The Idempotency-Key header of a POST (after validation: a request refused as invalid uses no key). A key its caller
 * used within 24 hours answers at once: the first reply again (Idempotent-Replayed: true), 422 when it came with
 * another request, 409 while that request runs. A new key is claimed by the request's change (answerOnce).
 */
export const idempotency = (): MiddlewareObj<
  APIGatewayProxyEventV2,
  APIGatewayProxyResultV2,
  Error,
  KeyedHttpContext
> => ({
  before: async (request) => {
    const { event, context } = request;
    if (event.requestContext.http.method !== 'POST') return undefined;
    const key = parseIdempotencyKey(event.headers?.['idempotency-key']);
    if (key === undefined) return undefined;
    const owner = ownerOf(context.caller, event.body);
    if (!owner) return undefined;
    const hash = requestHash({
      method: 'POST',
      path: event.rawPath,
      query: event.queryStringParameters ?? {},
      body: event.body ?? null,
    });
    const keyed: KeyedRequest = { ...owner, key, requestHash: hash, claimed: false };
    const stored = await storedAnswer(appDb(), keyed, context.caller ? keyReadWith(context.caller, key) : undefined);
    if (stored) return replayed(stored);
    context.keyed = keyed;
    return undefined;
  },
});

/**
 * Runs a keyed request's handler so that its key is claimed by its change and its reply stored with it
 * (shared/db/idempotency.ts keyedRequestDb); an error becomes its reply here, so a failed request is rolled back
 * with its key. A commit that fails once the reply is known is answered instead of it.
 */
export async function answerOnce(
  keyed: KeyedRequest,
  handle: () => Promise<APIGatewayProxyStructuredResultV2>,
): Promise<APIGatewayProxyStructuredResultV2> {
  // Taken before the handler runs: the transaction it may leave open for the reply is always ended below.
  const db = appDb();
  let reply: APIGatewayProxyStructuredResultV2;
  let failed = false;
  try {
    reply = await runKeyed(keyed, handle);
  } catch (error) {
    // Another request with the key committed meanwhile: its answer is this one's.
    if (error instanceof KeyTaken) return answerTaken(keyed);
    reply = toErrorReply(error) as APIGatewayProxyStructuredResultV2;
    failed = true;
  }
  try {
    await finishKeyed(db, keyed, reply as StoredReply, failed);
  } catch (error) {
    return toErrorReply(error) as APIGatewayProxyStructuredResultV2;
  }
  return reply;
}

async function answerTaken(keyed: KeyedRequest): Promise<APIGatewayProxyStructuredResultV2> {
  keyed.ended = true;
  try {
    const stored = await storedAnswer(appDb(), keyed);
    if (stored) return replayed(stored);
    throw keyInFlight(keyed.key);
  } catch (error) {
    return toErrorReply(error) as APIGatewayProxyStructuredResultV2;
  }
}
