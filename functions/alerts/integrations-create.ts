import { routes } from '#functions/routes.ts';
import { createIntegration } from '#shared/alerts/integrations.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/integrations/psa'], ({ caller, body, audit }) =>
  createIntegration(appDb(), caller, body, audit),
);
