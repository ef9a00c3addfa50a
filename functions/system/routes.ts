import { z } from 'zod';
import { appDb } from '#shared/db/client.ts';
import { checkHealth } from '#shared/db/health.ts';
import { route } from '#shared/http/route.ts';
import { servedOpenApi } from './openapi.ts';

const health = z.object({ status: z.literal('ok') });

/** The routes of system, each with the one domain call answering it. */
export const routes = {
  // Liveness only: an uptime monitor calling it must not resume a paused Aurora; readiness is /health/ready.
  'GET /api/v1/health': route(
    {
      operationId: 'systemHealth',
      auth: 'none',
      tag: 'system',
      summary: 'Liveness: 200 while the service answers; never reaches the database, so it lets Aurora pause',
      response: health,
    },
    async () => ({ status: 'ok' as const }),
  ),
  'GET /api/v1/health/ready': route(
    {
      operationId: 'systemReady',
      auth: 'none',
      tag: 'system',
      summary: 'Readiness: 200 once the database answers and is migrated (resumes a paused Aurora)',
      response: health,
      errors: [503],
    },
    () => checkHealth(appDb()),
  ),
  'GET /api/v1/openapi.json': route(
    {
      operationId: 'systemOpenapi',
      grants: ['route-table'],
      auth: 'none',
      tag: 'system',
      summary: 'This OpenAPI 3.1 document',
    },
    async ({ headers }) => servedOpenApi(headers),
  ),
} as const;
