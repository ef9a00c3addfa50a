import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { checkHealth } from '#shared/db/health.ts';

export const handler = httpHandler(routes['GET /api/v1/health'], () => checkHealth(appDb()));
