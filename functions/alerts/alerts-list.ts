import { routes } from '#functions/routes.ts';
import { listAlerts } from '#shared/alerts/alerts.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/alerts'], ({ caller, query }) =>
  listAlerts(appDb(), caller, query),
);
