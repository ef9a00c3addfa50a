import { routes } from '#functions/routes.ts';
import { listAuditAnchors } from '#shared/audit/anchor-list.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/anchors'], ({ caller, query }) =>
  listAuditAnchors(appDb(), caller, query),
);
