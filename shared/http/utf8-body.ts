import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { ValidationFailed } from '../errors.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Where the first byte that is not UTF-8 lies: decoding leniently, the first U+FFFD the bytes do not spell. */
function firstInvalidByte(bytes: Buffer): number {
  let offset = 0;
  for (const char of bytes.toString('utf8')) {
    if (char === '\uFFFD' && !(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd))
      return offset;
    offset += Buffer.byteLength(char);
  }
  return offset;
}

/**
 * A body that arrives base64-encoded (API Gateway's binary bodies, and a text body that is not UTF-8) is decoded
 * as strict UTF-8 before JSON parsing: bytes that are not UTF-8 are a 400 naming their offset, never replaced
 * with U+FFFD and stored.
 */
export const utf8Body = (): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  before: async ({ event }) => {
    if (!event.isBase64Encoded || !event.body) return;
    const bytes = Buffer.from(event.body, 'base64');
    try {
      event.body = strictUtf8.decode(bytes);
    } catch {
      const offset = firstInvalidByte(bytes);
      throw ValidationFailed('Request body is not valid UTF-8', [
        { path: 'body', message: `Invalid UTF-8 at byte ${offset}`, code: 'invalid_utf8' },
      ]);
    }
    event.isBase64Encoded = false;
  },
});
