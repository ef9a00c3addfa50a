import { routes } from '#functions/routes.ts';
import { getAlert } from '#shared/alerts/alerts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/alerts/{alertId}'], ({ caller, params }) =>
  getAlert(appDb(), caller, params.alertId),
);
