import { routes } from '#functions/routes.ts';
import { httpHandler } from '#shared/http/handler.ts';

// Liveness only: an uptime monitor calling it must not resume a paused Aurora (issue 14); readiness is /health/ready.
export const handler = httpHandler(routes['GET /api/v1/health'], async () => ({ status: 'ok' as const }));
