import { routes } from '#functions/routes.ts';
import { listDeliveries } from '#shared/alerts/alerts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/alerts/{alertId}/deliveries'], ({ caller, params, query }) =>
  listDeliveries(appDb(), caller, params.alertId, query),
);
