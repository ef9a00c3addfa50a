import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { timestampReply } from '#shared/db/timestamp.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { RawReply, type RouteDef, route } from '#shared/http/route.ts';

const common = { operationId: 'testReply', auth: 'none', tag: 'test', summary: 'A reply' } as const;
const item = {
  ...common,
  response: z.object({ id: z.uuid(), at: timestampReply, note: z.string().nullable() }),
} as const satisfies RouteDef;
const deletion = { ...common, status: 204 } as const satisfies RouteDef;
const download = {
  ...common,
  response: z.object({ rows: z.array(z.string()) }),
  download: { textTypes: [] },
} as const satisfies RouteDef;
const id = '6f1c2f38-53a4-4fd4-9c3b-2f2c3c1b7a10';

describe("a handler's reply", () => {
  // tsc checks these (npm test): each @ts-expect-error fails the build once its line compiles.
  it("is what its route's response schema takes: a reply the schema does not describe fails to compile", () => {
    httpHandler(item, async () => ({ id, at: new Date(), note: null }));
    // @ts-expect-error a field the schema requires is missing
    httpHandler(item, async () => ({ id, at: new Date() }));
    // @ts-expect-error a field of another type
    httpHandler(item, async () => ({ id, at: 1, note: null }));
    // @ts-expect-error a file only where the route says it answers one
    httpHandler(item, async () => new RawReply({ statusCode: 200, body: '' }));
    // @ts-expect-error a download answers a file, not its JSON value
    httpHandler(download, async () => ({ rows: [] }));
    httpHandler(download, async () => new RawReply({ statusCode: 200, body: '' }));
    httpHandler(deletion, async () => undefined);
    route(item, async () => ({ id, at: new Date(), note: null }));
    // @ts-expect-error a declared route's domain call is held to its schema as httpHandler's is
    route(item, async () => ({ id, at: new Date() }));
  });

  it('carries a Date as ISO 8601 in UTC, which its schema reads back unchanged', () => {
    const sent = JSON.parse(JSON.stringify({ id, at: new Date('2026-03-01T10:00:00.123Z'), note: null }));
    expect(sent.at).toBe('2026-03-01T10:00:00.123Z');
    expect(item.response.parse(sent)).toEqual(sent);
    expect(item.response.safeParse({ ...sent, at: '2026-03-01 10:00' }).success).toBe(false);
  });
});
