import { routes } from '#functions/routes.ts';
import { acknowledgeAlert } from '#shared/alerts/alerts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/alerts/{alertId}/acknowledge'], ({ caller, params, audit }) =>
  acknowledgeAlert(appDb(), caller, params.alertId, audit),
);
