import { routes } from '#functions/routes.ts';
import { listDetailedEntries } from '#shared/audit/query.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/logs'], ({ caller, query }) =>
  listDetailedEntries(appDb(), caller, query),
);
