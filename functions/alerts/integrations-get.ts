import { routes } from '#functions/routes.ts';
import { getIntegration } from '#shared/alerts/integrations.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/integrations/psa/{integrationId}'], ({ caller, params }) =>
  getIntegration(appDb(), caller, params.integrationId),
);
