import { createConfig, lintFromString } from '@redocly/openapi-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';

const t = useApi();
interface Operation {
  requestBody?: { content: Record<string, { schema: { minProperties?: number } }> };
  responses: Record<string, { content: Record<string, { schema: unknown }>; headers: Record<string, unknown> }>;
  parameters: { name: string; in: string; required?: boolean }[];
}
let document: { servers: unknown; paths: Record<string, Record<string, Operation>> };

beforeAll(async () => {
  document = (await t.api.request('GET', '/api/v1/openapi.json')).body;
});

/** Every schema object in the document, wherever it nests. */
function* schemas(value: unknown): Generator<{ required?: unknown; properties?: Record<string, unknown> }> {
  if (value === null || typeof value !== 'object') return;
  if ('type' in value || 'properties' in value || 'required' in value)
    yield value as { required?: unknown; properties?: Record<string, unknown> };
  for (const item of Object.values(value)) yield* schemas(item);
}

describe('the OpenAPI document', () => {
  it("lints clean under Redocly's recommended rules: no error", { timeout: 30_000 }, async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: 'openapi.json', config });
    const errors = problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('names the server it is served from', () => {
    expect(document.servers).toEqual([{ url: t.api.url, description: expect.any(String) }]);
  });

  it('lists every required key among the properties', () => {
    for (const schema of schemas(document)) {
      if (!Array.isArray(schema.required)) continue;
      for (const key of schema.required) expect(Object.keys(schema.properties ?? {})).toContain(key);
    }
  });

  it('documents the export as JSON or text/csv, an attachment named in Content-Disposition', () => {
    const reply = document.paths['/api/v1/audit-logs/export']!.get!.responses['200']!;
    expect(Object.keys(reply.content).sort()).toEqual(['application/json', 'text/csv']);
    expect(reply.content['text/csv']!.schema).toEqual({ type: 'string' });
    expect(reply.headers['Content-Disposition']).toMatchObject({ required: true, schema: { type: 'string' } });
  });

  it('says a change must name at least one field', () => {
    for (const path of [
      '/api/v1/orgs/organizations/{id}',
      '/api/v1/orgs/organizations/{id}/sites/{siteId}',
      '/api/v1/devices/{id}',
    ]) {
      expect(document.paths[path]!.patch!.requestBody!.content['application/json']!.schema.minProperties).toBe(1);
    }
  });

  it('enumerates the values of list filters, comma-separated', () => {
    const level = document.paths['/api/v1/devices/{id}/eventlogs']!.get!.parameters.find((p) => p.name === 'level');
    expect(level).toMatchObject({
      style: 'form',
      explode: false,
      schema: { type: 'array', items: { enum: ['info', 'warning', 'error', 'critical'] } },
    });
  });

  it('documents a 413 for every route that takes a body', () => {
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.requestBody) expect(operation.responses, `${method} ${path}`).toHaveProperty('413');
      }
    }
  });

  it('documents the Idempotency-Key header, 409 and 422 on every POST, and on no other method', () => {
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const header = (operation.parameters ?? []).find((p) => p.in === 'header' && p.name === 'Idempotency-Key');
        if (method !== 'post') {
          expect(header, `${method} ${path}`).toBeUndefined();
          continue;
        }
        expect(header, `${method} ${path}`).toBeDefined();
        expect(header!.required ?? false).toBe(false);
        expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['409', '422']));
      }
    }
  });
});
