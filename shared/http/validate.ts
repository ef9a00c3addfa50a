import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { z } from 'zod';
import { type IssueDetail, issueDetails, ValidationFailed } from '../errors.ts';
import { listParams } from '../request-values.ts';
import type { AuditHttpContext } from './audit.ts';
import type { RouteDef } from './route.ts';

export interface ValidatedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

export interface ValidatedContext extends AuditHttpContext {
  input?: ValidatedInput;
}

/** How deeply objects and arrays may nest in a request; deeper input is refused before anything walks it recursively. */
export const maxNesting = 64;

/** Why PostgreSQL text and jsonb cannot store a string: NUL, or a lone UTF-16 surrogate (not well-formed Unicode). */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'Text must not contain the NUL character';
  if (!text.isWellFormed()) return 'Text must be well-formed Unicode (no lone UTF-16 surrogate)';
  return undefined;
}

/**
 * Every string (key or value) PostgreSQL cannot store, with its path (a bad key is named by the path of its
 * object), in document order. Iterative, so no input can exhaust the stack: beyond `maxNesting` levels the
 * input is refused as nested too deeply.
 */
function textIssues(value: unknown, location: string): IssueDetail[] {
  const issues: IssueDetail[] = [];
  const pending: { value: unknown; path: string; depth: number }[] = [{ value, path: location, depth: 0 }];
  while (pending.length > 0) {
    const { value: item, path, depth } = pending.pop()!;
    if (typeof item === 'string') {
      const message = unstorable(item);
      if (message) issues.push({ path, message, code: 'invalid_format' });
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (depth >= maxNesting) {
      throw ValidationFailed(`Invalid ${location}: nested too deeply`, [
        { path, message: `Objects and arrays must not nest more than ${maxNesting} levels deep`, code: 'too_deep' },
      ]);
    }
    const entries = Object.entries(item);
    for (const [key] of entries) {
      const message = unstorable(key);
      if (message) issues.push({ path, message, code: 'invalid_format' });
    }
    // Pushed last to first, so they are visited in document order.
    for (let i = entries.length - 1; i >= 0; i--)
      pending.push({ value: entries[i]![1], path: `${path}.${entries[i]![0]}`, depth: depth + 1 });
  }
  return issues;
}

function parse(schema: z.ZodType | undefined, value: unknown, location: string): unknown {
  if (!schema) return undefined;
  const issues = textIssues(value, location);
  if (issues.length > 0) throw ValidationFailed(`Invalid ${location}`, issues);
  const result = schema.safeParse(value);
  if (!result.success) {
    const details = issueDetails(result.error, location, value);
    // The message names the first fault in words; `details` lists them all.
    throw ValidationFailed(`Invalid ${location}: ${details[0]?.message ?? 'not readable'}`, details);
  }
  return result.data;
}

/**
 * The part of a value its schema reads: fields an object schema drops (agents' unknown fields, docs/agents.md)
 * are dropped before anything looks at them, so their content (a NUL, deep nesting) never fails a request.
 */
function knownFields(schema: z.ZodType, value: unknown): unknown {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  switch (def.type) {
    case 'object': {
      // A strict object (catchall never) refuses unknown fields, a passthrough one keeps them: both see them all.
      if (def.catchall !== undefined || value === null || typeof value !== 'object' || Array.isArray(value))
        return value;
      const shape = def.shape as Record<string, z.ZodType>;
      return Object.fromEntries(
        Object.entries(value)
          .filter(([key]) => Object.hasOwn(shape, key))
          .map(([key, item]) => [key, knownFields(shape[key]!, item)]),
      );
    }
    case 'array':
      return Array.isArray(value) ? value.map((item) => knownFields(def.element as z.ZodType, item)) : value;
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
      return knownFields(def.innerType as z.ZodType, value);
    case 'pipe':
      return knownFields(def.in as z.ZodType, value);
    default:
      return value;
  }
}

/**
 * Query parameters the route does not take are refused like unknown body fields (a typo must not list
 * everything), and a scalar given twice is refused by name: API Gateway joins repeats with ',', which only a
 * list parameter reads as meant.
 */
function queryIssues(schema: z.ZodObject | undefined, rawQueryString: string): IssueDetail[] {
  const shape: Record<string, z.ZodType> = schema?.shape ?? {};
  // A catchall takes a family of names beyond the shape (GET /devices: cf.<key>), given by its `keyPattern` meta.
  const catchall = schema?._zod.def.catchall;
  const keyPattern = catchall ? z.globalRegistry.get(catchall)?.keyPattern : undefined;
  const family = typeof keyPattern === 'string' ? new RegExp(keyPattern) : undefined;
  const seen = new Map<string, number>();
  for (const [key] of new URLSearchParams(rawQueryString)) seen.set(key, (seen.get(key) ?? 0) + 1);
  return [...seen].flatMap(([key, count]): IssueDetail[] => {
    if (!Object.hasOwn(shape, key) && !family?.test(key))
      return [{ path: `query.${key}`, message: `Unknown query parameter ${key}`, code: 'unrecognized_keys' }];
    if (count > 1 && !listParams.has(shape[key]!))
      return [{ path: `query.${key}`, message: `Give ${key} once; it was given ${count} times`, code: 'repeated' }];
    return [];
  });
}

/** Path parameters whose percent-encoding does not decode (`%E0%A4%A`): the gateway passes such a segment on as sent. */
function pathIssues(rawPath: string, params: Record<string, string | undefined>): IssueDetail[] {
  const segments = rawPath.split('/');
  return Object.entries(params).flatMap(([name, value]): IssueDetail[] => {
    if (value === undefined || !segments.includes(value)) return [];
    try {
      decodeURIComponent(value);
      return [];
    } catch {
      return [{ path: `params.${name}`, message: 'Malformed percent-encoding', code: 'invalid_format' }];
    }
  });
}

/** Validates path parameters, query string and body against the route's zod schemas (400 VALIDATION_FAILED). */
export const validate = (
  def: RouteDef,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2, Error, ValidatedContext> => ({
  before: async (request) => {
    const { event } = request;
    const malformed = pathIssues(event.rawPath ?? '', event.pathParameters ?? {});
    if (malformed.length > 0) throw ValidationFailed('Invalid params', malformed);
    const queryProblems = queryIssues(def.query, event.rawQueryString ?? '');
    if (queryProblems.length > 0) throw ValidationFailed('Invalid query', queryProblems);
    request.context.input = {
      params: parse(def.params, event.pathParameters ?? {}, 'params'),
      query: parse(def.query, event.queryStringParameters ?? {}, 'query'),
      body: def.body ? parse(def.body, knownFields(def.body, event.body), 'body') : undefined,
    };
  },
});
