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
  // offset, 22P02 invalid text representation, 23514 CHECK constraint) can only have come from the request.
  if (['22007', '22008', '22009', '22P02', '23514'].includes(code))
    return errorReply(400, 'VALIDATION_FAILED', 'Request contains a value the database refuses');
  if (unavailable(code)) {
    logger.error('Database unavailable', error as Error);
    return errorReply(503, 'UNAVAILABLE', 'The service is temporarily unavailable; retry shortly');
  }
  logger.error('Unhandled error', error as Error);
  return errorReply(500, 'INTERNAL', 'Internal error');
}

/**
 * Connection-level failures: SQLSTATE class 08 (shared/db/pg.ts gives a lost connection 08006), too many connections,
 * shutdown, a statement cancelled by statement_timeout or lock_timeout (57014, 55P03: a hung database),
 * and socket errors.
 */
function unavailable(code: string): boolean {
  return (
    code.startsWith('08') ||
    [
      '53300',
      '57P01',
      '57P02',
      '57P03',
      '57014',
      '55P03',
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'ENOTFOUND',
    ].includes(code)
  );
}

export const errorEnvelope = (): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  onError: async (request) => {
    request.response = toErrorReply(request.error);
  },
});
