import { routes } from '#functions/routes.ts';
import { appDb } from '#shared/db/client.ts';
import { fileDownload } from '#shared/http/download.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { postureDevices } from '#shared/posture/report.ts';

export const handler = httpHandler(
  routes['GET /api/v1/reports/management-posture/devices'],
  ({ caller, query, headers }) => postureDevices(appDb(), caller, query, fileDownload(headers['accept-encoding'])),
);
