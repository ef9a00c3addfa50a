/**
 * A bounded contract fuzz over the OpenAPI document, against the local API on loopback: every route, with path,
 * query and body values drawn (seeded) from valid, boundary and hostile pools, read from the document itself.
 * Whatever is sent, the reply is never a 5xx, its status is one the document lists for the operation, a success
 * matches the route's response schema and an error the envelope.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunningAgent } from '#demo/agent/agent.ts';
import { routes } from '#functions/routes.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { useApi } from '#test/support/api.ts';
import { startSimulatedAgent } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let agent: { agentId: string; deviceId: string; token: string };
let document: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  required?: string[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
}
interface Operation {
  parameters?: { in: string; name: string; schema: Schema }[];
  requestBody?: { content: { 'application/json': { schema: Schema } } };
  responses: Record<string, unknown>;
}

let simulated: RunningAgent | undefined;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Fuzz');
  agent = await enrollDevice(t.api, tenant, 'fuzz-host');
  // Connected, so live queries reach an agent and their replies are checked too.
  simulated = await startSimulatedAgent(t.api, agent);
  document = (await t.api.request('GET', '/api/v1/openapi.json')).body;
});
afterAll(() => simulated?.stop());

/** A small seeded generator (mulberry32), so a failure replays. */
function generator(seed: number) {
  let state = seed;
  const next = () => {
    state = (state + 0x6d2b79f5) | 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}
type Rng = ReturnType<typeof generator>;

const hostileText = [
  '',
  ' ',
  '0',
  '-1',
  '1e3',
  '0x10',
  'Infinity',
  'NaN',
  'true',
  'null',
  '%',
  '%00',
  '%E0%A4%A',
  '%FF',
  '\u0000',
  '\ud800',
  "' OR 1=1 --",
  '<script>',
  '😀',
  'x'.repeat(300),
  '0000-01-01T00:00:00Z',
  '2026-01-01T00:00:00+15:00',
  '2026-02-30',
  '9007199254740992',
];

/** A value for a schema: with probability `hostile` (at each level) one of the hostile pool, else one it documents. */
function valueFor(schema: Schema | undefined, rng: Rng, ids: string[], hostile: number): unknown {
  if (rng.next() < hostile) return rng.pick([...hostileText, null, 1, -1, 1.5, true, [], {}]);
  if (!schema) return rng.pick(hostileText);
  if (schema.$ref) return valueFor(document.components.schemas[schema.$ref.split('/').pop()!], rng, ids, hostile);
  if (schema.anyOf) return valueFor(rng.pick(schema.anyOf), rng, ids, hostile);
  if (schema.enum) return rng.pick(schema.enum);
  const type = Array.isArray(schema.type) ? rng.pick(schema.type) : schema.type;
  switch (type) {
    case 'integer':
    case 'number':
      return rng.pick([schema.minimum ?? 0, Math.min(schema.maximum ?? 10, 10), 1, 2, 50, 100]);
    case 'boolean':
      return rng.next() < 0.5;
    case 'array':
      return Array.from({ length: rng.pick([0, 1, 2]) }, () => valueFor(schema.items, rng, ids, hostile));
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([name]) => schema.required?.includes(name) || rng.next() < 0.5)
          .map(([name, property]) => [name, valueFor(property, rng, ids, hostile)]),
      );
    case 'null':
      return null;
    default:
      if (schema.format === 'uuid') return rng.next() < 0.9 ? rng.pick(ids) : randomUUID();
      if (schema.format === 'date-time' || schema.pattern?.includes('02-29'))
        return rng.pick(['2026-03-01T10:00:00Z', '2031-01-01T00:00:00+14:00', '2026-03-01T10:00:00']);
      return rng.pick(['Security', 'Fuzz name', 'Europe/Berlin', 'user.login', 'pc']);
  }
}

/** The fixture a path parameter names; the tenant's own organization and device are never deleted (a random id). */
function idOf(method: string, template: string, name: string): string {
  if (name === 'siteId') return tenant.siteId;
  if (name === 'deviceId') return agent.deviceId;
  if (name !== 'id' || method === 'DELETE') return randomUUID();
  if (template.startsWith('/api/v1/orgs/organizations/')) return tenant.orgId;
  if (template.startsWith('/api/v1/devices/')) return agent.deviceId;
  if (template.startsWith('/api/v1/agents/')) return agent.agentId;
  return randomUUID();
}

/** A path segment as sent: percent-looking text raw (so malformed escapes arrive), a lone surrogate as its CESU bytes. */
const pathSegment = (text: string) =>
  text.startsWith('%') ? text : text.isWellFormed() ? encodeURIComponent(text) : '%ED%A0%80';

const envelope = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});

describe('a contract fuzz over the OpenAPI document', () => {
  it('never answers 5xx, nor a status or body the document does not list', { timeout: 240_000 }, async () => {
    const rng = generator(20261123);
    const failures: string[] = [];
    const ids = () => [tenant.orgId, tenant.siteId, agent.deviceId, agent.agentId, tenant.partnerId];
    let sent = 0;
    // Every request is drawn first (the generator's sequence, so the same run each time), then sent four at a time.
    const requests: {
      def: RouteDef;
      method: string;
      path: string;
      query: URLSearchParams;
      body: unknown;
      credential: string | undefined;
      operation: (typeof document.paths)[string][string];
    }[] = [];
    for (let round = 0; round < 16; round++) {
      for (const [key, def] of Object.entries(routes) as [string, RouteDef][]) {
        const [method, template] = key.split(' ') as [string, string];
        const operation = document.paths[template]![method.toLowerCase()]!;
        const parameters = operation.parameters ?? [];
        // Half the requests keep to what the document describes, half mix in hostile values.
        const hostile = round % 2 === 0 ? 0 : 0.3;
        const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
          const schema = parameters.find((p) => p.in === 'path' && p.name === name)?.schema;
          return pathSegment(String(valueFor(schema, rng, [idOf(method, template, name)], hostile)));
        });
        const query = new URLSearchParams();
        for (const parameter of parameters.filter((p) => p.in === 'query')) {
          if (rng.next() < 0.5) query.append(parameter.name, String(valueFor(parameter.schema, rng, ids(), hostile)));
        }
        if (rng.next() < 0.05) query.append('unknown', '1');
        const bodySchema = operation.requestBody?.content['application/json'].schema;
        const body = bodySchema ? valueFor(bodySchema, rng, ids(), hostile) : undefined;
        const token = def.auth === 'agent' ? agent.token : def.auth === 'none' ? undefined : tenant.partnerToken;
        const credential = rng.next() < 0.03 ? 'garbage' : token;
        requests.push({ def, method, path, query, body, credential, operation });
      }
    }
    const send = async ({ def, method, path, query, body, credential, operation }: (typeof requests)[number]) => {
      const response = await fetch(`${t.api.url}${path}${query.size > 0 ? `?${query}` : ''}`, {
        method,
        headers: {
          ...(credential ? { authorization: `Bearer ${credential}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      const type = response.headers.get('content-type') ?? '';
      const reply = { status: response.status, body: type.startsWith('application/json') ? JSON.parse(text) : text };
      sent++;
      const where = `${method} ${path}?${query} ${JSON.stringify(body)?.slice(0, 200)} → ${reply.status}`;
      const documented = Object.keys(operation.responses).map(Number);
      if (reply.status >= 500 || !documented.includes(reply.status)) failures.push(`${where} (undocumented)`);
      else if (reply.status >= 400 && !envelope.safeParse(reply.body).success) failures.push(`${where} (no envelope)`);
      else if (
        reply.status < 300 &&
        def.download &&
        !(def.download.jsonReply && type.startsWith('application/json')) &&
        !response.headers.get('content-disposition')
      )
        failures.push(`${where} (a download without Content-Disposition)`);
      else if (reply.status < 300 && def.response && typeof reply.body !== 'string') {
        if (!def.response.safeParse(reply.body).success) failures.push(`${where} (outside the response schema)`);
      } else if (reply.status < 300 && def.response && !def.download?.textTypes.includes(type.split(';')[0]!))
        failures.push(`${where} (an undocumented content type ${type})`);
    };
    for (let i = 0; i < requests.length; i += 4) await Promise.all(requests.slice(i, i + 4).map(send));
    expect(sent).toBeGreaterThan(1000);
    expect(failures).toEqual([]);
  });
});
