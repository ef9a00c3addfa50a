import { routes } from '#functions/routes.ts';
import { securityEvents } from '#shared/audit/reports.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/reports/security-events'], ({ caller, query }) =>
  securityEvents(appDb(), caller, query),
);
