import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { checkHealth } from '#shared/db/health.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/health/ready'], () => checkHealth(appDb()));
