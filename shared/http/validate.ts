import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import type { z } from 'zod';
import { ValidationFailed } from '../errors.ts';
import type { AuditHttpContext } from './audit.ts';
import { issueDetails } from './error-envelope.ts';
import type { RouteDef } from './route.ts';

export interface ValidatedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

export interface ValidatedContext extends AuditHttpContext {
  input?: ValidatedInput;
}

/** Paths of every string (key or value) holding a NUL character, which PostgreSQL text and jsonb cannot store. */
function nulPaths(value: unknown, path: string): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? [path] : [];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => [...(key.includes('\u0000') ? [path] : []), ...nulPaths(item, `${path}.${key}`)]);
}

function parse(schema: z.ZodType | undefined, value: unknown, location: string): unknown {
  if (!schema) return undefined;
  const nul = nulPaths(value, location);
  if (nul.length > 0) {
    throw ValidationFailed(`Invalid ${location}`, nul.map((path) => ({ path, message: 'Text must not contain the NUL character', code: 'invalid_format' })));
  }
  const result = schema.safeParse(value);
  if (!result.success) throw ValidationFailed(`Invalid ${location}`, issueDetails(result.error, location));
  return result.data;
}

/** Validates path parameters, query string and body against the route's zod schemas (400 VALIDATION_FAILED). */
export const validate = (def: RouteDef): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2, Error, ValidatedContext> => ({
  before: async (request) => {
    const { event } = request;
    request.context.input = {
      params: parse(def.params, event.pathParameters ?? {}, 'params'),
      query: parse(def.query, event.queryStringParameters ?? {}, 'query'),
      body: parse(def.body, event.body, 'body'),
    };
  },
});
