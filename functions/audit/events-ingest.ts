import { routes } from '#functions/routes.ts';
import { ingestAuditEvents } from '#shared/audit/ingest.ts';
import { appDb } from '#shared/db/client.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['POST /api/v1/audit-logs/events'], ({ caller, body, headers }) =>
  ingestAuditEvents(appDb(), caller, body, headers['idempotency-key']),
);
