import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { useApi } from '#test/support/api.ts';

const t = useApi();

describe('the service', () => {
  it('reports healthy once the database answers', async () => {
    const reply = await t.api.request('GET', '/api/v1/health');
    expect(reply).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it('publishes an OpenAPI 3.1 document with every route of the table', async () => {
    const reply = await t.api.request('GET', '/api/v1/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.body.openapi).toBe('3.1.0');
    const documented = Object.entries(reply.body.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(Object.keys(routes).sort());
    expect(reply.body.paths['/api/v1/agents/enroll'].post.requestBody.content['application/json'].schema).toBeDefined();
  });

  it('never shows a stack trace in an error', async () => {
    const reply = await t.api.request('GET', '/api/v1/devices/not-a-uuid', { token: 'garbage' });
    expect(reply.status).toBe(401);
    expect(JSON.stringify(reply.body)).not.toMatch(/at .*\.ts/);
  });
});
