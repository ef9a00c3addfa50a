import { routes } from '#functions/routes.ts';
import { updateIntegration } from '#shared/alerts/integrations.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['PATCH /api/v1/integrations/psa/{integrationId}'],
  ({ caller, params, body, audit }) => updateIntegration(appDb(), caller, params.integrationId, body, audit),
);
