import { submitLogs } from '#shared/agent-logs/ingest.ts';
import { listDiagnosticLogs } from '#shared/agent-logs/query.ts';
import { getLogRetention, updateLogRetention } from '#shared/agent-logs/retention.ts';
import * as agentLogs from '#shared/agent-logs/schemas.ts';
import { onAgentLogsStored } from '#shared/agent-logs/stored.ts';
import * as agents from '#shared/agents/schemas.ts';
import { armAfterSeal } from '#shared/audit-streams/arm.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';

// Stored entries arm the delivery of their organization's streams (a destination with the agent-logs stream).
onAgentLogsStored(armAfterSeal);

/** The routes of agent-logs, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/agents/{id}/logs': route(
    {
      operationId: 'agentLogsIngest',
      auth: 'agent',
      tag: 'agent-logs',
      summary:
        "Submit up to 500 diagnostic log entries (2 MiB), stored whole in one statement (without an Idempotency-Key and above 100 entries, 100 per insert); 429 RATE_LIMITED with Retry-After beyond the device's hourly budget; " +
        'honours an Idempotency-Key header (1-255 printable characters) for 24 hours: a resend gets the first reply and stores nothing, the same key with another body is 422 IDEMPOTENCY_KEY_REUSED',
      params: agents.agentParams,
      body: agentLogs.submitLogs,
      maxBodyBytes: 2 * 1024 * 1024,
      status: 201,
      response: agentLogs.logsReceipt,
      errors: [400, 401, 403, 404, 409, 413, 429],
    },
    ({ caller, params, body }) => submitLogs(appDb(), caller, params.id, body.logs),
  ),
  'GET /api/v1/devices/{id}/diagnostic-logs': route(
    {
      operationId: 'agentLogsList',
      auth: 'userOrApiKey',
      tag: 'agent-logs',
      summary: "A device's diagnostic log entries, newest first (logs:read)",
      params: h.idParams,
      query: agentLogs.diagnosticLogsQuery,
      response: agentLogs.diagnosticLogPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listDiagnosticLogs(appDb(), caller, params.id, query),
  ),
  'GET /api/v1/orgs/organizations/{id}/log-retention': route(
    {
      operationId: 'logRetentionGet',
      auth: 'userOrApiKey',
      tag: 'agent-logs',
      summary:
        "Days the organization's agent diagnostic logs and device event logs are kept (logs:read); configured false with the defaults (30 and 90) when never set",
      params: h.idParams,
      response: agentLogs.logRetention,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getLogRetention(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/log-retention': route(
    {
      operationId: 'logRetentionUpdate',
      auth: 'userOrApiKey',
      tag: 'agent-logs',
      summary:
        "Set the days the organization's agent diagnostic logs and device event logs are kept, 1 to 3650 each (logs:manage); the daily retention run deletes older rows; audited as log_retention.update",
      params: h.idParams,
      body: agentLogs.updateLogRetention,
      response: agentLogs.logRetention,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateLogRetention(appDb(), caller, params.id, body, audit),
  ),
} as const;
