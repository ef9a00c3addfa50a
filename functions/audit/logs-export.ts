import { routes } from '#functions/routes.ts';
import { exportAuditLogs } from '#shared/audit/export.ts';
import { appDb } from '#shared/db/client.ts';
import { fileDownload } from '#shared/http/download.ts';
import { httpHandler } from '#shared/http/handler.ts';

export const handler = httpHandler(routes['GET /api/v1/audit-logs/export'], ({ caller, audit, query, headers }) =>
  exportAuditLogs(appDb(), caller, audit, query, fileDownload(headers['accept-encoding'])),
);
