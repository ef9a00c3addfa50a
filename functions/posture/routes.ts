import * as agents from '#shared/agents/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { fileDownload } from '#shared/http/download.ts';
import { route } from '#shared/http/route.ts';
import { postureDevices, postureReport } from '#shared/posture/report.ts';
import * as posture from '#shared/posture/schemas.ts';
import { postureCatalogFor, uploadPosture } from '#shared/posture/snapshot.ts';

/** The routes of posture, each with the one domain call answering it. */
export const routes = {
  'PUT /api/v1/agents/{id}/management-posture': route(
    {
      operationId: 'agentsPostureUpload',
      group: 'agents',
      auth: 'agent',
      tag: 'posture',
      summary:
        "The device's management-posture snapshot: replaces the stored one unless that one is newer; audited as device.posture.changed only when the detections changed",
      params: agents.agentParams,
      body: posture.postureSnapshot,
      maxBodyBytes: 256 * 1024,
      response: posture.postureReceipt,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => uploadPosture(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/agents/{id}/posture-catalog': route(
    {
      operationId: 'agentsPostureCatalog',
      group: 'agents',
      auth: 'agent',
      tag: 'posture',
      summary: 'The catalogue of management products an agent detects: service and process names per platform',
      params: agents.agentParams,
      response: posture.postureCatalogReply,
      errors: [401, 403, 404],
    },
    ({ caller, params }) => postureCatalogFor(appDb(), caller, params.id),
  ),
  'GET /api/v1/reports/management-posture': route(
    {
      operationId: 'hierarchyPostureReport',
      group: 'hierarchy',
      auth: 'userOrApiKey',
      tag: 'posture',
      summary:
        'Management-posture report (devices:read): coverage as never scanned, stale, clean and with a detection, and per product the devices active and installed; format=csv downloads it',
      query: posture.postureReportQuery,
      download: { textTypes: ['text/csv'], jsonReply: true },
      response: posture.postureReport,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, query, headers }) => postureReport(appDb(), caller, query, fileDownload(headers['accept-encoding'])),
  ),
  'GET /api/v1/reports/management-posture/devices': route(
    {
      operationId: 'hierarchyPostureDevices',
      group: 'hierarchy',
      auth: 'userOrApiKey',
      tag: 'posture',
      summary:
        'The devices whose latest snapshot detected a product with a status (devices:read), paged; format=csv downloads up to 10,000',
      query: posture.postureDevicesQuery,
      download: { textTypes: ['text/csv'], jsonReply: true },
      response: posture.postureDevicePage,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, query, headers }) => postureDevices(appDb(), caller, query, fileDownload(headers['accept-encoding'])),
  ),
} as const;
