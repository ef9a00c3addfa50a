import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';
import { getEvent, getEventLog, listEventLogs, listEvents } from '#shared/live-query/queries.ts';
import * as live from '#shared/live-query/schemas.ts';

const liveErrors = [400, 401, 403, 404, 409, 502, 504] as const;

/** The routes of live-query, each with the one domain call answering it. */
export const routes = {
  // Live event-log queries: relayed to the device's agent over its WebSocket connection (wsRoutes); logs:read,
  // the device tenant-scoped as GET /devices/{id}. 409 DEVICE_OFFLINE without a connection, 504 AGENT_TIMEOUT after 28 s
  // (LIVE_QUERY_TIMEOUT_MS), 502 AGENT_BAD_RESPONSE for an unreadable answer, 404 for what the agent does not have.
  // Each exists under /system-tools/devices/{deviceId} and /devices/{id}, one handler for both, except the list of logs:
  // GET /devices/{id}/eventlogs is the stored event list, so the live list is under /system-tools only.
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs': route(
    {
      operationId: 'liveQueryEventlogsList',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary:
        "The device's event logs, live from its agent (logs:read). Only here: GET /devices/{id}/eventlogs is the stored event list",
      params: live.systemToolsDeviceParams,
      response: live.eventLogDescriptorPage,
      errors: liveErrors,
    },
    ({ caller, params }) => listEventLogs(appDb(), caller, params.deviceId),
  ),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}': route(
    {
      operationId: 'liveQueryEventlogsGet',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary: 'One event log of the device, live from its agent; the name is matched case-insensitively (logs:read)',
      params: live.systemToolsLogParams,
      response: live.eventLogDescriptor,
      errors: liveErrors,
    },
    ({ caller, params }) => getEventLog(appDb(), caller, params.deviceId, params.name),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}': route(
    {
      operationId: 'liveQueryEventlogsGetDevices',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}',
      params: live.deviceLogParams,
      response: live.eventLogDescriptor,
      errors: liveErrors,
    },
    ({ caller, params }) => getEventLog(appDb(), caller, params.id, params.name),
  ),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events': route(
    {
      operationId: 'liveQueryEventsList',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary:
        'Events of one event log of the device, live from its agent, newest first, filtered by the agent (logs:read)',
      params: live.systemToolsLogParams,
      query: live.liveEventsQuery,
      response: live.liveEventPage,
      errors: liveErrors,
    },
    ({ caller, params, query }) => listEvents(appDb(), caller, params.deviceId, params.name, query),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events': route(
    {
      operationId: 'liveQueryEventsListDevices',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}/events',
      params: live.deviceLogParams,
      query: live.liveEventsQuery,
      response: live.liveEventPage,
      errors: liveErrors,
    },
    ({ caller, params, query }) => listEvents(appDb(), caller, params.id, params.name, query),
  ),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}': route(
    {
      operationId: 'liveQueryEventsGet',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary: 'One event of the device by its record id, live from its agent (logs:read)',
      params: live.systemToolsEventParams,
      response: live.liveEvent,
      errors: liveErrors,
    },
    ({ caller, params }) => getEvent(appDb(), caller, params.deviceId, params.name, params.recordId),
  ),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events/{recordId}': route(
    {
      operationId: 'liveQueryEventsGetDevices',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'live-query',
      summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}',
      params: live.deviceEventParams,
      response: live.liveEvent,
      errors: liveErrors,
    },
    ({ caller, params }) => getEvent(appDb(), caller, params.id, params.name, params.recordId),
  ),
} as const;
