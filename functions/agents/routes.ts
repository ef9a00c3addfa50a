import { getIngestLimits, updateIngestLimits } from '#shared/agents/ingest-limits.ts';
import * as agents from '#shared/agents/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { heartbeatAndArm } from '#shared/monitoring/evaluate.ts';

/** The routes of agents, each with the one domain call answering it. */
export const routes = {
  // Agents: the bearer token from enrollment (401 when missing or revoked); the path names the
  // calling agent itself (another agent's id 403, an id no device matches 404). Bodies above maxBodyBytes: 413 unparsed.
  'POST /api/v1/agents/{id}/heartbeat': route(
    {
      operationId: 'agentsHeartbeat',
      auth: 'agent',
      tag: 'agents',
      summary:
        'Heartbeat: records last seen, source IP, agent version, status and role; audits agent.source.ip.changed when the source IP changed; arms the offline monitors; answers the monitoring configVersion',
      params: agents.agentParams,
      body: agents.heartbeat,
      maxBodyBytes: 64 * 1024,
      response: agents.heartbeatReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => heartbeatAndArm(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/ingest-limits': route(
    {
      operationId: 'agentsIngestLimitsGet',
      auth: 'userOrApiKey',
      tag: 'agents',
      summary: 'The hourly ingest budgets per device in force for the organization (orgs:read)',
      params: h.idParams,
      response: agents.ingestLimits,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getIngestLimits(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/ingest-limits': route(
    {
      operationId: 'agentsIngestLimitsUpdate',
      auth: 'userOrApiKey',
      tag: 'agents',
      summary:
        'Override the hourly ingest budgets per device (orgs:write, partner and platform users; null restores the default); audited as organization.update',
      params: h.idParams,
      body: agents.updateIngestLimits,
      response: agents.ingestLimits,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateIngestLimits(appDb(), caller, params.id, body, audit),
  ),
} as const;
