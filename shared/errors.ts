/**
 * Domain errors: values with a code. `shared/http/error-envelope.ts` maps them to
 * HTTP statuses in one place (DESIGN.md "HTTP conventions").
 */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'LAST_SITE'
  | 'SITE_NOT_EMPTY'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE'
  | 'DEVICE_OFFLINE'
  | 'AGENT_TIMEOUT'
  | 'AGENT_BAD_RESPONSE';

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
export const Forbidden = (message = 'You do not have permission for this action') =>
  new DomainError('FORBIDDEN', message);
export const Unauthenticated = (message = 'Authentication required') => new DomainError('UNAUTHENTICATED', message);
export const ValidationFailed = (message: string, details?: unknown) =>
  new DomainError('VALIDATION_FAILED', message, details);
/** 429 with a Retry-After header of `retryAfterSeconds` (shared/http/error-envelope.ts). */
export const RateLimited = (message: string, retryAfterSeconds: number, details: Record<string, unknown> = {}) =>
  new DomainError('RATE_LIMITED', message, { retryAfterSeconds, ...details });

/** Live queries (seed 4.5, 7): the device's agent has no WebSocket connection. */
export const DeviceOffline = () =>
  new DomainError('DEVICE_OFFLINE', 'The device is offline: its agent has no live connection');
/** Live queries (seed 7, 8): the agent did not answer in time. */
export const AgentTimeout = (waitedMs: number) =>
  new DomainError('AGENT_TIMEOUT', `The agent did not answer within ${Number((waitedMs / 1000).toFixed(1))} seconds`);
/** Live queries (seed 7): the agent's answer could not be read. */
export const AgentBadResponse = (message = "The agent's answer could not be read") =>
  new DomainError('AGENT_BAD_RESPONSE', message);
