import { type OutgoingHttpHeaders, request } from 'node:http';
import { networkInterfaces } from 'node:os';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { httpAccessLogFormat } from '#infra/aws/access-log-format.ts';
import { type RunningHttpGateway, startHttpGateway } from '#infra/local/http-gateway.ts';
import type { Handler } from '#shared/http/handler.ts';

interface Echo {
  event: APIGatewayProxyEventV2;
  context: {
    awsRequestId: string;
    functionName: string;
    functionVersion: string;
    memoryLimitInMB: string;
    remaining: number;
  };
}

const calls: string[] = [];

const handlers: Record<string, Handler> = {
  echo: async (event, context) => ({
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      event,
      context: {
        awsRequestId: context.awsRequestId,
        functionName: context.functionName,
        functionVersion: context.functionVersion,
        memoryLimitInMB: context.memoryLimitInMB,
        remaining: context.getRemainingTimeInMillis(),
      },
    }),
  }),
  stats: async () => ({ statusCode: 200, body: 'stats' }),
  throws: async () => {
    throw new Error('boom at secret/place.ts');
  },
  // API Gateway accepts any JSON value from the function; the aws-lambda type only names the structured shape.
  plain: async () => ({ hello: 'world' }) as APIGatewayProxyResultV2,
  created: async () => ({
    statusCode: 201,
    headers: { 'x-custom': 'yes' },
    cookies: ['session=abc; HttpOnly'],
    body: 'made',
  }),
};

const routes = {
  'GET /api/v1/devices/{id}': { handler: 'test/echo' },
  'GET /api/v1/devices/stats': { handler: 'test/stats' },
  'GET /api/v1/orgs/organizations/{id}/sites/{siteId}': { handler: 'test/echo' },
  'POST /api/v1/echo': { handler: 'test/echo' },
  'GET /api/v1/files/{proxy+}': { handler: 'test/echo' },
  'GET /api/v1/throws': { handler: 'test/throws' },
  'GET /api/v1/plain': { handler: 'test/plain' },
  'POST /api/v1/created': { handler: 'test/created' },
};

let gateway: RunningHttpGateway;
/** The access-log lines the gateway rendered, in order. */
const accessLines: string[] = [];

beforeAll(async () => {
  gateway = await startHttpGateway({
    port: 0,
    host: '127.0.0.1',
    routes,
    accessLog: (line) => accessLines.push(line),
    loadHandler: async (path) => {
      const name = path.replace('test/', '');
      return async (event, context) => {
        calls.push(`${name} ${event.rawPath}`);
        return handlers[name]!(event, context);
      };
    },
  });
});

afterAll(() => gateway.close());

async function echo(path: string, init?: RequestInit): Promise<Echo> {
  const response = await fetch(gateway.url + path, init);
  expect(response.status).toBe(200);
  return (await response.json()) as Echo;
}

function rawGet(path: string, headers: OutgoingHttpHeaders): Promise<string> {
  return new Promise((resolve, reject) => {
    request(gateway.url + path, { headers }, (response) => {
      let body = '';
      response
        .setEncoding('utf8')
        .on('data', (chunk: string) => (body += chunk))
        .on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

describe('local HTTP API gateway', () => {
  it('listens on the ephemeral port it reports', () => {
    expect(gateway.port).toBeGreaterThan(0);
    expect(gateway.url).toBe(`http://127.0.0.1:${gateway.port}`);
  });

  it('decodes path parameters and reports the matched route key', async () => {
    const { event } = await echo('/api/v1/orgs/organizations/a%20b/sites/s%2F1');
    expect(event.pathParameters).toEqual({ id: 'a b', siteId: 's/1' });
    expect(event.routeKey).toBe('GET /api/v1/orgs/organizations/{id}/sites/{siteId}');
    expect(event.requestContext.routeKey).toBe(event.routeKey);
    expect(event.rawPath).toBe('/api/v1/orgs/organizations/a%20b/sites/s%2F1');
    expect(event.version).toBe('2.0');
    expect(event.requestContext.stage).toBe('$default');
    expect(event.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
  });

  it('prefers the most specific route', async () => {
    const stats = await fetch(`${gateway.url}/api/v1/devices/stats`);
    expect(await stats.text()).toBe('stats');
    const { event } = await echo('/api/v1/devices/d-1');
    expect(event.pathParameters).toEqual({ id: 'd-1' });
  });

  it('passes the rest of the path to a greedy parameter', async () => {
    const { event } = await echo('/api/v1/files/a/b%20c.txt');
    expect(event.pathParameters).toEqual({ proxy: 'a/b c.txt' });
  });

  it.each([
    ['an unknown path', 'GET', '/api/v1/nothing'],
    ['a trailing slash', 'GET', '/api/v1/devices/d-1/'],
    ['another method', 'DELETE', '/api/v1/devices/d-1'],
  ])('answers 404 Not Found for %s', async (_, method, path) => {
    const response = await fetch(gateway.url + path, { method });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ message: 'Not Found' });
  });

  it('passes the raw query string and joins repeated keys', async () => {
    const { event } = await echo('/api/v1/devices/d-1?a=1&a=2&b=x%20y');
    expect(event.rawQueryString).toBe('a=1&a=2&b=x%20y');
    expect(event.queryStringParameters).toEqual({ a: '1,2', b: 'x y' });
    const bare = await echo('/api/v1/devices/d-1');
    expect(bare.event).not.toHaveProperty('queryStringParameters');
    expect(bare.event).not.toHaveProperty('cookies');
  });

  it('lower-cases headers and moves cookies out of them', async () => {
    // node:http sends an array value as repeated header lines, which fetch would merge into one.
    const { event } = JSON.parse(
      await rawGet('/api/v1/devices/d-1', {
        'X-Trace': 'T1',
        Cookie: 'a=1; b=2',
        'User-Agent': 'probe/1',
        'X-Multi': ['one', 'two'],
      }),
    ) as Echo;
    expect(event.headers['x-trace']).toBe('T1');
    expect(event.headers['x-multi']).toBe('one,two');
    expect(event.headers).not.toHaveProperty('cookie');
    expect(event.cookies).toEqual(['a=1', 'b=2']);
    expect(event.requestContext.http).toMatchObject({
      method: 'GET',
      protocol: 'HTTP/1.1',
      userAgent: 'probe/1',
      sourceIp: '127.0.0.1',
    });
  });

  it('passes a JSON body as text', async () => {
    const { event } = await echo('/api/v1/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: '{"name":"Zoë"}',
    });
    expect(event.body).toBe('{"name":"Zoë"}');
    expect(event.isBase64Encoded).toBe(false);
  });

  it('passes a binary body base64-encoded', async () => {
    const bytes = new Uint8Array([0, 1, 2, 255]);
    const { event } = await echo('/api/v1/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body!, 'base64')).toEqual(Buffer.from(bytes));
  });

  it('refuses a body over 10 MiB with 413 without calling the handler', async () => {
    const before = calls.length;
    const response = await fetch(`${gateway.url}/api/v1/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array(11 * 1024 * 1024),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: {
        code: 'PAYLOAD_TOO_LARGE',
        message: 'Request body exceeds the limit of 10485760 bytes',
        details: { maxBytes: 10485760 },
      },
    });
    expect(calls.length).toBe(before);
  });

  it('answers 500 Internal Server Error when the handler throws, logging the error only', async () => {
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const response = await fetch(`${gateway.url}/api/v1/throws`);
      expect(response.status).toBe(500);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ message: 'Internal Server Error' });
      expect(text).not.toContain('secret/place');
      expect(log).toHaveBeenCalled();
    } finally {
      log.mockRestore();
    }
  });

  it('answers 200 JSON for a result without statusCode', async () => {
    const response = await fetch(`${gateway.url}/api/v1/plain`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ hello: 'world' });
  });

  it('writes status, headers and cookies of a structured result', async () => {
    const response = await fetch(`${gateway.url}/api/v1/created`, { method: 'POST' });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-custom')).toBe('yes');
    expect(response.headers.getSetCookie()).toEqual(['session=abc; HttpOnly']);
    expect(await response.text()).toBe('made');
  });

  it("writes the stage's access-log line of each request, in the stage's format: the route, the status, an integration's failure", async () => {
    accessLines.length = 0;
    const device = await fetch(`${gateway.url}/api/v1/devices/d-1`);
    const requestId = device.headers.get('apigw-requestid');
    const log = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    await fetch(`${gateway.url}/api/v1/throws`)
      .then((reply) => reply.text())
      .finally(() => log.mockRestore());
    await fetch(`${gateway.url}/nothing/here`).then((reply) => reply.text());
    await device.text();
    await vi.waitFor(() => expect(accessLines).toHaveLength(3));
    const lines = accessLines.map((line) => JSON.parse(line) as Record<string, string>);
    for (const line of lines) expect(Object.keys(line)).toEqual(Object.keys(JSON.parse(httpAccessLogFormat)));
    expect(lines[0]).toEqual({
      requestId,
      requestTime: expect.stringMatching(/^\d{13}$/),
      routeKey: 'GET /api/v1/devices/{id}',
      method: 'GET',
      path: '/api/v1/devices/d-1',
      status: '200',
      latencyMs: expect.stringMatching(/^\d+$/),
      integrationError: '-',
      sourceIp: '127.0.0.1',
    });
    expect(lines.slice(1).map((line) => [line.routeKey, line.status, line.integrationError !== '-'])).toEqual([
      ['GET /api/v1/throws', '500', true],
      ['-', '404', false],
    ]);
  });

  it('gives the handler a Lambda context', async () => {
    const { context } = await echo('/api/v1/devices/d-1');
    expect(context.functionName).toBe('logbook-local-test-echo');
    expect(context.functionVersion).toBe('$LATEST');
    expect(context.memoryLimitInMB).toBe('1024');
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.remaining).toBeGreaterThan(0);
    expect(context.remaining).toBeLessThanOrEqual(30_000);
  });
});

describe('a local HTTP API gateway started without a host', () => {
  // An address of this machine other than loopback; a host without one has nothing to show here.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((address) => address?.family === 'IPv4' && !address.internal)?.address;

  it.skipIf(!external)('listens on every interface, IPv6 or not, and names 127.0.0.1 in its url', async () => {
    const open = await startHttpGateway({
      port: 0,
      routes,
      loadHandler: async () => async () => ({ statusCode: 200, body: 'ok' }),
    });
    try {
      expect(open.url).toBe(`http://127.0.0.1:${open.port}`);
      const response = await fetch(`http://${external}:${open.port}/api/v1/plain`);
      expect(await response.text()).toBe('ok');
    } finally {
      await open.close();
    }
  });
});

describe('closing the local HTTP API gateway', () => {
  it('waits for the handlers still answering, as a Lambda invocation runs to its end without its caller', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const started = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const finished: string[] = [];
    const open = await startHttpGateway({
      port: 0,
      host: '127.0.0.1',
      routes,
      loadHandler: async () => async () => {
        entered();
        await released;
        finished.push('handler');
        return { statusCode: 200, body: 'late' };
      },
    });
    const caller = fetch(`${open.url}/api/v1/plain`).catch(() => 'connection closed');
    await started;
    const closing = open.close().then(() => finished.push('closed'));
    // The caller hears its connection closed; only then does the handler finish.
    expect(await caller).toBe('connection closed');
    release();
    await closing;
    expect(finished).toEqual(['handler', 'closed']);
  });
});
