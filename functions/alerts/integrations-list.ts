import { routes } from '#functions/routes.ts';
import { listIntegrations } from '#shared/alerts/integrations.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/integrations/psa'], ({ caller, query }) =>
  listIntegrations(appDb(), caller, query),
);
