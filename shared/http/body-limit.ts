import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { DomainError } from '../errors.ts';

/**
 * The limit of a route that names none: 1 MiB, well within Lambda's 6 MB invocation payload, so every body
 * beyond a limit is answered in the error envelope (docs/system.md "Conventions").
 */
export const defaultMaxBodyBytes = 1024 * 1024;

/** The size in bytes of the body as the client sent it (a base64 body is measured decoded). */
export function bodyBytes(event: Pick<APIGatewayProxyEventV2, 'body' | 'isBase64Encoded'>): number {
  if (!event.body) return 0;
  return Buffer.byteLength(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
}

/**
 * Refuses a body above `maxBytes` with 413 PAYLOAD_TOO_LARGE before anything reads it: no JSON
 * parsing, no validation, no database work (the route table's `maxBodyBytes`).
 */
export const bodyLimit = (maxBytes: number): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  before: async (request) => {
    const size = bodyBytes(request.event);
    if (size > maxBytes) {
      throw new DomainError(
        'PAYLOAD_TOO_LARGE',
        `Request body of ${size} bytes exceeds the limit of ${maxBytes} bytes`,
        { maxBytes },
      );
    }
  },
});
