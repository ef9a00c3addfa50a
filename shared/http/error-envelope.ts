import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { z } from 'zod';
import { DomainError, type ErrorCode, issueDetails } from '../errors.ts';
import { logger } from '../logger.ts';

const statusOf: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  LAST_SITE: 409,
  SITE_NOT_EMPTY: 409,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  DEVICE_OFFLINE: 409,
  AGENT_BAD_RESPONSE: 502,
  AGENT_TIMEOUT: 504,
  NAME_CONFLICT: 409,
  INVALID_STATE: 409,
};

export function errorReply(
  status: number,
  code: string,
  message: string,
  details?: unknown,
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: status,
    headers: {
      'content-type': 'application/json',
      ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
      ...(status === 429 ? retryAfter(details) : {}),
      // Every 503 says when to come back; an outage the pool recovers from lasts seconds.
      ...(status === 503 ? { 'retry-after': String(unavailableRetrySeconds) } : {}),
    },
    body: JSON.stringify({ error: { code, message, ...(details === undefined ? {} : { details }) } }),
  };
}

/** Retry-After of a 503: a reconnect attempt plus a statement timeout fit in it. */
const unavailableRetrySeconds = 5;

/** A 429's Retry-After header, from the retryAfterSeconds of its details (shared/errors.ts RateLimited). */
function retryAfter(details: unknown): Record<string, string> {
  const seconds = (details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
  return typeof seconds === 'number' ? { 'retry-after': String(Math.max(1, Math.ceil(seconds))) } : {};
}

/** Maps any error to the envelope (docs/system.md "Conventions"); never a stack trace, never a 500 for bad input. */
export function toErrorReply(error: unknown): APIGatewayProxyResultV2 {
  if (error instanceof DomainError) return errorReply(statusOf[error.code], error.code, error.message, error.details);
  if (error instanceof z.ZodError)
    return errorReply(400, 'VALIDATION_FAILED', 'Request is invalid', issueDetails(error));
  const cause = (error as { cause?: { package?: string } } | null)?.cause;
  if (cause?.package === '@middy/http-json-body-parser') {
    return errorReply(400, 'VALIDATION_FAILED', 'Request body must be valid JSON');
  }
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  // Text the database cannot store (22021 invalid byte sequence, 22P05 untranslatable character) is bad input, not a fault.
  if (code === '22021' || code === '22P05')
    return errorReply(400, 'VALIDATION_FAILED', 'Request contains text the database cannot store');
  // Backstop behind validation: values the database refuses (22007/22008 date-time format or range, 22009 time zone
  // offset, 22P02 invalid text representation) can only have come from the request.
  if (['22007', '22008', '22009', '22P02'].includes(code))
    return errorReply(400, 'VALIDATION_FAILED', 'Request contains a value the database refuses');
  if (code === '23514') return checkViolation(error as DatabaseError);
  if (code === '23503') return foreignKeyViolation(error as DatabaseError);
  if (unavailable(code)) {
    logger.error('Database unavailable', error as Error);
    return errorReply(503, 'UNAVAILABLE', 'The service is temporarily unavailable; retry shortly');
  }
  logger.error('Unhandled error', error as Error);
  return errorReply(500, 'INTERNAL', 'Internal error');
}

/** What node-postgres (and, in its message, the Data API) tells of a refused statement. */
type DatabaseError = { message?: string; detail?: string; constraint?: string };

const constraintOf = (error: DatabaseError) =>
  error.constraint ?? /constraint "([^"]+)"/.exec(error.message ?? '')?.[1] ?? 'unnamed';

/** A column name as the API names the field: partner_id → partnerId. */
const fieldOf = (column: string) => column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());

/**
 * A CHECK constraint (23514) is a rule the request broke: 400 naming the rule (the constraint) and, when the
 * constraint's name carries them, the fields it binds.
 */
function checkViolation(error: DatabaseError): APIGatewayProxyResultV2 {
  const rule = constraintOf(error);
  return errorReply(400, 'VALIDATION_FAILED', `Request breaks the rule ${rule}`, [
    { path: 'body', message: `The database rule ${rule} refuses this combination of values`, code: 'check', rule },
  ]);
}

/**
 * A foreign key (23503): a parent the request names does not exist (404, naming the field: `Key (partner_id)=…
 * is not present in table "partners"`), or a row still has children (409: `… is still referenced from table`).
 */
function foreignKeyViolation(error: DatabaseError): APIGatewayProxyResultV2 {
  const text = `${error.detail ?? ''} ${error.message ?? ''}`;
  const referenced = /is still referenced from table "([^"]+)"/.exec(text);
  if (referenced)
    return errorReply(409, 'CONFLICT', `Rows of ${referenced[1]} still refer to it; remove them first`, [
      { path: referenced[1], message: 'Still referenced', code: 'foreign_key', rule: constraintOf(error) },
    ]);
  const missing = /Key \(([^)]+)\)=\([^)]*\) is not present in table "([^"]+)"/.exec(text);
  const field = missing ? missing[1]!.split(', ').map(fieldOf).join(', ') : 'unknown';
  const table = missing?.[2] ?? 'parent';
  return errorReply(404, 'NOT_FOUND', `No ${table} row has this ${field}`, [
    { path: field, message: `Not found in ${table}`, code: 'foreign_key', rule: constraintOf(error) },
  ]);
}

/**
 * What the caller waits out, never a 500: SQLSTATE class 08 (shared/db/pg.ts gives a lost connection 08006), class 53
 * (too many connections, disk full, out of memory), shutdown, a statement cancelled by statement_timeout or
 * lock_timeout (57014, 55P03: a hung database), a serialization failure or deadlock (40001, 40P01), a
 * read-only server during a failover (25006), a write the database refuses its role (42501: a revoked grant the
 * operator restores), and socket errors.
 */
function unavailable(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    ['40001', '40P01', '25006', '42501'].includes(code) ||
    ['57P01', '57P02', '57P03', '57014', '55P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND'].includes(code)
  );
}

export const errorEnvelope = (): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  onError: async (request) => {
    request.response = toErrorReply(request.error);
  },
});
