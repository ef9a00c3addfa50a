import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { defaultMaxBodyBytes } from './body-limit.ts';
import type { RouteDef } from './route.ts';

const errorBody = z
  .object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) })
  .meta({ id: 'Error', description: 'Error envelope; VALIDATION_FAILED carries the zod issues in details' });

const errorText: Record<number, string> = {
  400: 'VALIDATION_FAILED: the request is invalid; nothing was stored',
  401: 'UNAUTHENTICATED: missing, invalid, expired or revoked credentials',
  403: 'FORBIDDEN: the caller lacks the permission',
  404: "NOT_FOUND: absent, or another tenant's",
  409: 'Conflict with the current state (code says which)',
  413: 'PAYLOAD_TOO_LARGE',
  422: 'IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used within 24 hours for another request (named in the message)',
  429: "RATE_LIMITED: over a budget; retry after the Retry-After header's seconds",
  502: "AGENT_BAD_RESPONSE: the agent's answer could not be read",
  503: 'The database is not reachable',
  504: 'AGENT_TIMEOUT: the agent did not answer in time',
};

const security: Record<RouteDef['auth'], ZodOpenApiOperationObject['security']> = {
  none: [],
  user: [{ userJwt: [] }],
  userOrApiKey: [{ userJwt: [] }, { apiKey: [] }],
  agent: [{ agentToken: [] }],
};

/** A download's headers: the attachment's file name, and gzip when the file is large (shared/http/download.ts). */
const downloadHeaders = z.object({
  'Content-Disposition': z
    .string()
    .regex(/^attachment; filename="[^"]+"$/)
    .meta({ description: 'attachment; filename="…", the file name naming the export and its time' }),
  'Content-Encoding': z
    .enum(['gzip'])
    .optional()
    .meta({ description: 'gzip when the file exceeds 5.5 MiB and the request accepts gzip' }),
});

/** Every POST takes an Idempotency-Key (shared/http/idempotency.ts; docs/idempotency.md). */
const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/)
    .optional()
    .meta({
      description:
        'Makes a retry safe: the same caller sending the same key and request within 24 hours gets the first reply again ' +
        '(with Idempotent-Replayed: true) and nothing is done twice; another request under the key is 422 ' +
        'IDEMPOTENCY_KEY_REUSED, a retry while the first still runs 409 IDEMPOTENCY_KEY_IN_FLIGHT. 1 to 255 visible ' +
        'ASCII characters (spaces only between them), else 400',
    }),
});

/** The header that marks a replayed reply. */
const replayedHeader = z.object({
  'Idempotent-Replayed': z
    .enum(['true'])
    .optional()
    .meta({ description: 'Present on a reply replayed for a retry with the same Idempotency-Key' }),
});

/** The content of a success reply: the response schema as JSON, and a download's text types besides. */
function successContent(def: RouteDef, keyed: boolean) {
  if (!def.response) return keyed ? { headers: replayedHeader } : {};
  const json = { 'application/json': { schema: def.response } };
  if (!def.download) return { content: json, ...(keyed ? { headers: replayedHeader } : {}) };
  const text = Object.fromEntries(def.download.textTypes.map((type) => [type, { schema: z.string() }]));
  // A report whose JSON is its ordinary reply names a file only for its text types.
  return {
    headers: def.download.jsonReply ? downloadHeaders.partial() : downloadHeaders,
    content: { ...json, ...text },
  };
}

/**
 * The OpenAPI 3.1 document of a route table, generated from its zod schemas; `servers` names where it is served
 * (the document's own origin, so clients and contract tests reach the same API).
 */
export function buildOpenApi(
  routes: Record<string, RouteDef>,
  info: { title: string; version: string },
  servers: { url: string; description: string }[],
) {
  const paths: ZodOpenApiPathsObject = {};
  const operationIds = new Set<string>();
  for (const [key, def] of Object.entries(routes)) {
    const [method, path] = key.split(' ') as [string, string];
    const status = String(def.status ?? 200);
    const keyed = method === 'POST';
    const { operationId } = def;
    if (operationIds.has(operationId)) throw new Error(`Two routes name their operation ${operationId}`);
    operationIds.add(operationId);
    const operation: ZodOpenApiOperationObject = {
      summary: def.summary,
      tags: [def.tag],
      operationId,
      security: security[def.auth],
      requestParams: {
        ...(def.params ? { path: def.params } : {}),
        ...(def.query ? { query: def.query } : {}),
        ...(keyed ? { header: idempotencyKeyHeader } : {}),
      },
      // A missing body reads as {}; it is optional where {} is valid.
      ...(def.body
        ? {
            requestBody: {
              required: !def.body.safeParse({}).success,
              content: { 'application/json': { schema: def.body } },
            },
          }
        : {}),
      responses: {
        [status]: { description: status === '204' ? 'Done' : 'Success', ...successContent(def, keyed) },
        ...Object.fromEntries(
          // Any route refuses a query parameter it does not take (400); every route with a body has a size limit
          // (shared/http/body-limit.ts); a POST's Idempotency-Key can be in flight (409) or reused (422).
          [...new Set([...(def.errors ?? []), 400, ...(def.body ? [413] : []), ...(keyed ? [409, 422] : [])])]
            .sort((a, b) => a - b)
            .map((code) => [
              String(code),
              {
                description:
                  code === 413 && def.body
                    ? `PAYLOAD_TOO_LARGE: the body exceeds ${def.maxBodyBytes ?? defaultMaxBodyBytes} bytes`
                    : (errorText[code] ?? 'Error'),
                content: { 'application/json': { schema: errorBody } },
              },
            ]),
        ),
      },
    };
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation };
  }
  return createDocument({
    openapi: '3.1.0',
    info,
    servers,
    paths,
    components: {
      securitySchemes: {
        userJwt: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'User token (claims: sub, email, name, role, scope, partnerId, orgId, permissions)',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'Organization API key lbk_… (also accepted in X-API-Key)',
        },
        agentToken: { type: 'http', scheme: 'bearer', description: 'Agent token issued at enrollment' },
      },
    },
  });
}
