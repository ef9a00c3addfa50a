import * as agents from '#shared/agents/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { listEventLogs } from '#shared/event-logs/query.ts';
import * as eventLogs from '#shared/event-logs/schemas.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { submitEventsAndEvaluate } from '#shared/monitoring/event-log-items.ts';

/** The routes of event-logs, each with the one domain call answering it. */
export const routes = {
  'PUT /api/v1/agents/{id}/eventlogs': route(
    {
      operationId: 'eventLogsIngest',
      auth: 'agent',
      tag: 'event-logs',
      summary:
        "Submit up to 1000 device events (4 MiB) in one transaction; duplicates on (device, source, eventId) are ignored and not counted; audited as agent.eventlogs.submit; 429 RATE_LIMITED with Retry-After beyond the device's hourly budget",
      params: agents.agentParams,
      body: eventLogs.submitEvents,
      maxBodyBytes: 4 * 1024 * 1024,
      response: eventLogs.eventsReceipt,
      errors: [400, 401, 403, 404, 413, 429],
    },
    ({ caller, params, body, audit }) => submitEventsAndEvaluate(appDb(), caller, params.id, body.events, audit),
  ),
  'GET /api/v1/devices/{id}/eventlogs': route(
    {
      operationId: 'eventLogsList',
      auth: 'userOrApiKey',
      tag: 'event-logs',
      summary: "A device's stored event log entries, newest first (logs:read)",
      params: h.idParams,
      query: eventLogs.eventLogsQuery,
      response: eventLogs.deviceEventLogPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listEventLogs(appDb(), caller, params.id, query),
  ),
} as const;
