import { routes } from '#functions/routes.ts';
import { auditSummary } from '#shared/audit/reports.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/reports/summary'], ({ caller, query }) =>
  auditSummary(appDb(), caller, query),
);
