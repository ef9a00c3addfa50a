/**
 * Domain errors: values with a code. `shared/http/error-envelope.ts` maps them to
 * HTTP statuses in one place (DESIGN.md "HTTP conventions").
 */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'LAST_SITE'
  | 'SITE_NOT_EMPTY'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE';

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const NotFound = (what = 'Resource') => new DomainError('NOT_FOUND', `${what} not found`);
export const Forbidden = (message = 'You do not have permission for this action') => new DomainError('FORBIDDEN', message);
export const Unauthenticated = (message = 'Authentication required') => new DomainError('UNAUTHENTICATED', message);
export const ValidationFailed = (message: string, details?: unknown) => new DomainError('VALIDATION_FAILED', message, details);
/** 429 with a Retry-After header of `retryAfterSeconds` (shared/http/error-envelope.ts). */
export const RateLimited = (message: string, retryAfterSeconds: number, details: Record<string, unknown> = {}) =>
  new DomainError('RATE_LIMITED', message, { retryAfterSeconds, ...details });
