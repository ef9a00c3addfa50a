import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import * as m from '#shared/maintenance/schemas.ts';
import {
  createWindow,
  deleteWindow,
  deviceMaintenance,
  endWindowNow,
  getWindow,
  listOccurrences,
  listWindows,
  startWindowNow,
  updateWindow,
} from '#shared/maintenance/windows.ts';
import { notifyAfterWindow } from '#shared/notifications/notify.ts';
import { occurrencesQuery } from '#shared/schedules/schemas.ts';

/** When a window ends (by hand, by a change, by its deletion), the alerts it held back that still fire are told. */
const onEnd = (windowId: string) => notifyAfterWindow(appDb(), windowId);

/** The routes of maintenance windows. */
export const routes = {
  'POST /api/v1/maintenance-windows': route(
    {
      operationId: 'maintenanceWindowsCreate',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary:
        'Create a maintenance window: a schedule in local time with a duration, targets, and what it suppresses (devices:write)',
      body: m.createWindow,
      status: 201,
      response: m.window,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createWindow(appDb(), caller, body, audit),
  ),
  'GET /api/v1/maintenance-windows': route(
    {
      operationId: 'maintenanceWindowsList',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary:
        'Maintenance windows the caller reaches, with the occurrence in progress and the next one (devices:read)',
      query: m.listQuery,
      response: m.windowPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listWindows(appDb(), caller, query),
  ),
  'GET /api/v1/maintenance-windows/{windowId}': route(
    {
      operationId: 'maintenanceWindowsGet',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'Get a maintenance window',
      params: m.windowParams,
      response: m.window,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getWindow(appDb(), caller, params.windowId),
  ),
  'PATCH /api/v1/maintenance-windows/{windowId}': route(
    {
      operationId: 'maintenanceWindowsUpdate',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'Change a maintenance window (its armed occurrences follow the change)',
      params: m.windowParams,
      body: m.updateWindow,
      response: m.window,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateWindow(appDb(), caller, params.windowId, body, audit, onEnd),
  ),
  'DELETE /api/v1/maintenance-windows/{windowId}': route(
    {
      operationId: 'maintenanceWindowsDelete',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'Delete a maintenance window (an occurrence in progress ends with it)',
      params: m.windowParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteWindow(appDb(), caller, params.windowId, audit, onEnd),
  ),
  'GET /api/v1/maintenance-windows/{windowId}/occurrences': route(
    {
      operationId: 'maintenanceWindowsOccurrences',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: "The window's occurrences between from and to (default: the next 90 days), in local time and UTC",
      params: m.windowParams,
      query: occurrencesQuery,
      response: m.occurrencesReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listOccurrences(appDb(), caller, params.windowId, query),
  ),
  'POST /api/v1/maintenance-windows/{windowId}/start': route(
    {
      operationId: 'maintenanceWindowsStart',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'Start the window now for a number of minutes ("maintenance now for 2 hours"); 409 while in progress',
      params: m.windowParams,
      body: m.startWindow,
      response: m.window,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => startWindowNow(appDb(), caller, params.windowId, body.minutes, audit),
  ),
  'POST /api/v1/maintenance-windows/{windowId}/end': route(
    {
      operationId: 'maintenanceWindowsEnd',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'End the occurrence in progress now; alerts it held back that still fire are notified once',
      params: m.windowParams,
      response: m.window,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => endWindowNow(appDb(), caller, params.windowId, audit, onEnd),
  ),
  'GET /api/v1/devices/{id}/maintenance': route(
    {
      operationId: 'maintenanceDeviceGet',
      auth: 'userOrApiKey',
      tag: 'maintenance',
      summary: 'Whether the device is in a maintenance window now, until when, and which',
      params: h.idParams,
      response: m.deviceMaintenance,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => deviceMaintenance(appDb(), caller, params.id),
  ),
} as const;
