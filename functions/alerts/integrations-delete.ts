import { routes } from '#functions/routes.ts';
import { deleteIntegration } from '#shared/alerts/integrations.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(
  routes['DELETE /api/v1/integrations/psa/{integrationId}'],
  ({ caller, params, audit }) => deleteIntegration(appDb(), caller, params.integrationId, audit),
);
