import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import type { z } from 'zod';
import { type IssueDetail, issueDetails, ValidationFailed } from '../errors.ts';
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
  if (!result.success) throw ValidationFailed(`Invalid ${location}`, issueDetails(result.error, location));
  return result.data;
}

/** Validates path parameters, query string and body against the route's zod schemas (400 VALIDATION_FAILED). */
export const validate = (
  def: RouteDef,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2, Error, ValidatedContext> => ({
  before: async (request) => {
    const { event } = request;
    request.context.input = {
      params: parse(def.params, event.pathParameters ?? {}, 'params'),
      query: parse(def.query, event.queryStringParameters ?? {}, 'query'),
      body: parse(def.body, event.body, 'body'),
    };
  },
});
