import type { z } from 'zod';

/**
 * Domain errors: values with a code. `shared/http/error-envelope.ts` maps them to
 * HTTP statuses in one place (docs/system.md).
 */
export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'LAST_SITE'
  | 'SITE_NOT_EMPTY'
  | 'CONFLICT'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'IDEMPOTENCY_KEY_IN_FLIGHT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE'
  | 'DEVICE_OFFLINE'
  | 'AGENT_TIMEOUT'
  | 'AGENT_BAD_RESPONSE'
  | 'NAME_CONFLICT'
  | 'INVALID_STATE';

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
/** 409: the request collides with a stored record (a device group's name taken in its organization). */
export const Conflict = (message: string) => new DomainError('CONFLICT', message);
export const Forbidden = (message = 'You do not have permission for this action') =>
  new DomainError('FORBIDDEN', message);
export const Unauthenticated = (message = 'Authentication required') => new DomainError('UNAUTHENTICATED', message);
export const ValidationFailed = (message: string, details?: unknown) =>
  new DomainError('VALIDATION_FAILED', message, details);
/** 429 with a Retry-After header of `retryAfterSeconds` (shared/http/error-envelope.ts). */
export const RateLimited = (message: string, retryAfterSeconds: number, details: Record<string, unknown> = {}) =>
  new DomainError('RATE_LIMITED', message, { retryAfterSeconds, ...details });

/** Live queries: the device's agent has no WebSocket connection. */
export const DeviceOffline = () =>
  new DomainError('DEVICE_OFFLINE', 'The device is offline: its agent has no live connection');
/** Live queries: the agent did not answer in time. */
export const AgentTimeout = (waitedMs: number) =>
  new DomainError('AGENT_TIMEOUT', `The agent did not answer within ${Number((waitedMs / 1000).toFixed(1))} seconds`);
/** Live queries: the agent's answer could not be read. */
export const AgentBadResponse = (message = "The agent's answer could not be read") =>
  new DomainError('AGENT_BAD_RESPONSE', message);

/** Zod issues as the `details` of a 400: where (body.logs.3.level), what, and zod's code. */
export interface IssueDetail {
  path: string;
  message: string;
  code: string;
}

export function issueDetails(error: z.ZodError, location?: string, input?: unknown): IssueDetail[] {
  const path = (...parts: PropertyKey[]) => [...(location ? [location] : []), ...parts.map(String)].join('.');
  return error.issues.flatMap((issue): IssueDetail[] =>
    // An unknown field is named in the path, like any other field at fault.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: path(...issue.path, key), message: `Unknown field ${key}`, code: issue.code }))
      : [
          {
            path: path(...issue.path),
            message: missingMessage(issue, location, input) ?? issue.message,
            code: issue.code,
          },
        ],
  );
}

/** What a missing field or parameter is called where it is missing. */
const missingNouns: Record<string, string> = { query: 'query parameter', params: 'path parameter', body: 'field' };

/** "Missing query parameter q" for a required value that is absent from `input`; undefined for any other issue. */
function missingMessage(issue: z.core.$ZodIssue, location: string | undefined, input: unknown): string | undefined {
  if (issue.code !== 'invalid_type' || issue.path.length === 0 || input === undefined) return undefined;
  let value: unknown = input;
  for (const key of issue.path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  if (value !== undefined) return undefined;
  const name = issue.path.map(String).join('.');
  return `Missing ${missingNouns[location ?? ''] ?? 'field'} ${name}`;
}

/** Scripts: another live script of the library has this name. */
export const NameConflict = (name: string) =>
  new DomainError('NAME_CONFLICT', `A script named ${JSON.stringify(name)} already exists in this library`);
/** Alerts: the change does not apply to the alert's status (acknowledging a resolved alert). */
export const InvalidState = (message: string) => new DomainError('INVALID_STATE', message);
