import * as agents from '#shared/agents/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { backtest } from '#shared/monitoring/backtest.ts';
import {
  getAgentConfig,
  getMetrics,
  getMonitoringSettings,
  getMonitorStates,
  putMonitoringSettings,
} from '#shared/monitoring/config.ts';
import { uploadCheckResults, uploadMetrics } from '#shared/monitoring/evaluate.ts';
import * as p from '#shared/policies/schemas.ts';

const tag = 'monitoring';

/**
 * The routes of monitoring: the agent's config, metrics and check results (served by the agents' Lambda, which is
 * warm for heartbeats), the device's states and samples, and the backtest of an item.
 */
export const routes = {
  'GET /api/v1/agents/{id}/config': route(
    {
      operationId: 'monitoringAgentConfig',
      group: 'agents',
      auth: 'agent',
      agentPolicies: 'monitoring',
      tag,
      summary: "The device's effective monitoring items and their configVersion (the heartbeat reply names it)",
      params: agents.agentParams,
      response: p.agentConfig,
      errors: [401, 403, 404],
    },
    ({ caller, params }) => getAgentConfig(appDb(), caller, params.id),
  ),
  'PUT /api/v1/agents/{id}/metrics': route(
    {
      operationId: 'monitoringAgentMetrics',
      group: 'agents',
      auth: 'agent',
      agentPolicies: 'monitoring',
      tag,
      summary:
        'Metric samples with their timestamps, stored once per device, metric, volume and time, and evaluated against the metric items in force',
      params: agents.agentParams,
      body: p.metricUpload,
      maxBodyBytes: 512 * 1024,
      response: p.uploadReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => uploadMetrics(appDb(), caller, params.id, body, audit),
  ),
  'POST /api/v1/agents/{id}/check-results': route(
    {
      operationId: 'monitoringAgentCheckResults',
      group: 'agents',
      auth: 'agent',
      agentPolicies: 'monitoring',
      tag,
      summary:
        'Service, process, event-log and script check results per item key, stored once per device, item and time, and evaluated',
      params: agents.agentParams,
      body: p.checkResultUpload,
      maxBodyBytes: 512 * 1024,
      response: p.uploadReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => uploadCheckResults(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/devices/{id}/monitor-states': route(
    {
      operationId: 'monitoringStates',
      group: 'policies',
      auth: 'userOrApiKey',
      tag,
      summary: 'The state of each monitoring item on the device: ok, pending or firing, since when, last value',
      params: h.idParams,
      response: p.monitorStateList,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getMonitorStates(appDb(), caller, params.id),
  ),
  'GET /api/v1/devices/{id}/metrics': route(
    {
      operationId: 'monitoringMetrics',
      group: 'policies',
      auth: 'userOrApiKey',
      tag,
      summary: "One metric's stored samples of the device in a time range (default: the last 24 hours)",
      params: h.idParams,
      query: p.metricsQuery,
      response: p.metricSeries,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => getMetrics(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/policies/{id}/items/{itemKey}/backtest': route(
    {
      operationId: 'monitoringBacktest',
      group: 'policies',
      auth: 'userOrApiKey',
      tag,
      summary:
        'Replay the stored samples of the devices a metric item applies to: how often it would have fired and resolved, per device',
      params: p.backtestParams,
      body: p.backtestBody,
      response: p.backtestReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body }) => backtest(appDb(), caller, params.id, params.itemKey, body),
  ),
  'GET /api/v1/orgs/organizations/{id}/monitoring-settings': route(
    {
      operationId: 'monitoringSettingsGet',
      group: 'policies',
      auth: 'userOrApiKey',
      tag,
      summary: "How long the organization's metric samples and check results are kept (policies:read)",
      params: h.idParams,
      response: p.monitoringSettings,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getMonitoringSettings(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/monitoring-settings': route(
    {
      operationId: 'monitoringSettingsPut',
      group: 'policies',
      auth: 'userOrApiKey',
      tag,
      summary:
        'Set how long metric samples and check results are kept (orgs:write; null: 30 days); audited as organization.update',
      params: h.idParams,
      body: p.putMonitoringSettings,
      response: p.monitoringSettings,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putMonitoringSettings(appDb(), caller, params.id, body, audit),
  ),
} as const;
