import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closeAppDb } from '#shared/db/client.ts';
import { bodyBytes, bodyLimit } from '#shared/http/body-limit.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { httpEvent, lambdaContext } from '#test/support/events.ts';

type Request = Parameters<NonNullable<ReturnType<typeof bodyLimit>['before']>>[0];
const run = async (maxBytes: number, body: string | undefined, isBase64Encoded = false) => {
  const request = { event: { body, isBase64Encoded } } as unknown as Request;
  await bodyLimit(maxBytes).before!(request);
};

describe('bodyBytes', () => {
  it('measures text as UTF-8 bytes and a base64 body decoded', () => {
    expect(bodyBytes({ body: undefined, isBase64Encoded: false })).toBe(0);
    expect(bodyBytes({ body: 'abc', isBase64Encoded: false })).toBe(3);
    expect(bodyBytes({ body: 'äöü€', isBase64Encoded: false })).toBe(9);
    expect(bodyBytes({ body: '😀', isBase64Encoded: false })).toBe(4);
    expect(bodyBytes({ body: Buffer.from('hello world').toString('base64'), isBase64Encoded: true })).toBe(11);
  });
});

describe('bodyLimit', () => {
  it('lets a body of exactly the limit through and refuses one byte more with 413 PAYLOAD_TOO_LARGE', async () => {
    await expect(run(4, 'abcd')).resolves.toBeUndefined();
    await expect(run(4, 'abcde')).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE', details: { maxBytes: 4 } });
    await expect(run(4, 'ab€')).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    await expect(run(0, undefined)).resolves.toBeUndefined();
  });

  it('agrees with Buffer.byteLength for random text and sizes (fuzzed)', async () => {
    const alphabet = ['a', 'é', '€', '😀', '"', '\\', '\n'];
    for (let i = 0; i < 300; i++) {
      const text = Array.from({ length: randomInt(0, 200) }, () => alphabet[randomInt(alphabet.length)]).join('');
      const base64 = randomInt(2) === 1;
      const body = base64 ? Buffer.from(text).toString('base64') : text;
      const limit = randomInt(0, 900);
      const size = Buffer.byteLength(text);
      if (size > limit) await expect(run(limit, body, base64)).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
      else await expect(run(limit, body, base64)).resolves.toBeUndefined();
    }
  });

  describe("in a route's chain (maxBodyBytes)", () => {
    // The audit middleware builds the (lazy) database client of every request; nothing here queries it.
    beforeAll(() => {
      process.env.APP_DATABASE_URL ??= 'postgres://logbook_app:none@127.0.0.1:9/none';
    });
    afterAll(closeAppDb);
    const body = z.object({ text: z.string() });
    let called = 0;
    const open = httpHandler(
      {
        operationId: 'test/open',
        auth: 'none',
        tag: 'test',
        summary: 'test',
        body,
        maxBodyBytes: 32,
      } as const satisfies RouteDef,
      async (request) => {
        called++;
        return { length: request.body.text.length };
      },
    );
    // Authenticating an agent needs the database, which this test does not have: a 413 shows that nothing got that far.
    const agentOnly = httpHandler(
      {
        operationId: 'test/agent',
        auth: 'agent',
        tag: 'test',
        summary: 'test',
        body,
        maxBodyBytes: 32,
      } as const satisfies RouteDef,
      async () => ({}),
    );
    const tooBig = `{"text": "${'x'.repeat(40)}`;

    it('answers 413 in the error envelope, without parsing the body or calling the handler', async () => {
      const reply = await open({ ...httpEvent({ method: 'POST' }), body: tooBig }, lambdaContext);
      expect(reply).toMatchObject({ statusCode: 413 });
      expect(JSON.parse((reply as { body: string }).body)).toEqual({
        error: {
          code: 'PAYLOAD_TOO_LARGE',
          message: `Request body of ${tooBig.length} bytes exceeds the limit of 32 bytes`,
          details: { maxBytes: 32 },
        },
      });
      expect(called).toBe(0);
    });

    it('answers 413 before authentication', async () => {
      expect(await agentOnly({ ...httpEvent({ method: 'POST' }), body: tooBig }, lambdaContext)).toMatchObject({
        statusCode: 413,
      });
    });

    it('passes a body within the limit on to parsing, validation and the handler', async () => {
      expect(await open(httpEvent({ method: 'POST', body: { text: 'short' } }), lambdaContext)).toMatchObject({
        statusCode: 200,
        body: '{"length":5}',
      });
      expect(await open({ ...httpEvent({ method: 'POST' }), body: '{"text": 5}' }, lambdaContext)).toMatchObject({
        statusCode: 400,
      });
      expect(called).toBe(1);
    });
  });
});
