import { routes } from '#functions/routes.ts';
import { verifyAuditChain } from '#shared/audit/query.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/verify'], ({ caller, query }) =>
  verifyAuditChain(appDb(), caller, query),
);
