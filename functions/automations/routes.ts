import {
  createAutomation,
  deleteAutomation,
  getAutomation,
  listAutomations,
  listVersions,
  updateAutomation,
} from '#shared/automations/automations.ts';
import { deviceAutomations, dryRun, getRun, listOccurrences, listRuns, runNow } from '#shared/automations/runs.ts';
import * as a from '#shared/automations/schemas.ts';
import { receiveWebhook, rotateWebhookSecret } from '#shared/automations/webhook.ts';
import { appDb } from '#shared/db/client.ts';
import { parseIdempotencyKey } from '#shared/db/idempotency.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { occurrencesQuery } from '#shared/schedules/schemas.ts';

/** The routes of automations. */
export const routes = {
  'POST /api/v1/automations': route(
    {
      operationId: 'automationsCreate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'automations',
      summary:
        'Create an automation: triggers (schedule, event, manual, webhook), conditions, ordered actions and guards (scripts:write)',
      body: a.createAutomation,
      status: 201,
      response: a.automation,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createAutomation(appDb(), caller, body, audit),
  ),
  'GET /api/v1/automations': route(
    {
      operationId: 'automationsList',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'Automations the caller reaches (scripts:read)',
      query: a.listQuery,
      response: a.automationPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listAutomations(appDb(), caller, query),
  ),
  'GET /api/v1/automations/{id}': route(
    {
      operationId: 'automationsGet',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'Get an automation',
      params: a.automationParams,
      response: a.automation,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getAutomation(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/automations/{id}': route(
    {
      operationId: 'automationsUpdate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'Change an automation: a new version; its armed occurrences follow the change',
      params: a.automationParams,
      body: a.updateAutomation,
      response: a.automation,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateAutomation(appDb(), caller, params.id, body, audit),
  ),
  'DELETE /api/v1/automations/{id}': route(
    {
      operationId: 'automationsDelete',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'Delete an automation (its runs stay readable)',
      params: a.automationParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteAutomation(appDb(), caller, params.id, audit),
  ),
  'GET /api/v1/automations/{id}/versions': route(
    {
      operationId: 'automationsVersions',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'The versions of an automation, newest first',
      params: a.automationParams,
      query: a.pageOnly,
      response: a.versionPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listVersions(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/automations/{id}/run': route(
    {
      operationId: 'automationsRun',
      grants: ['agent-channel', 'seal-key'],
      auth: 'userOrApiKey',
      tag: 'automations',
      summary:
        'Run an automation now on the devices named, a group, or every device in scope; keyed by Idempotency-Key (scripts:run)',
      params: a.automationParams,
      body: a.targetBody,
      status: 202,
      response: a.runStarted,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit, headers }) =>
      runNow(appDb(), caller, params.id, body, audit, parseIdempotencyKey(headers['idempotency-key'])),
  ),
  'POST /api/v1/automations/{id}/dry-run': route(
    {
      operationId: 'automationsDryRun',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'Which devices would run which actions now, and the next occurrences; runs nothing',
      params: a.automationParams,
      body: a.targetBody,
      response: a.dryRun,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body }) => dryRun(appDb(), caller, params.id, body),
  ),
  'GET /api/v1/automations/{id}/occurrences': route(
    {
      operationId: 'automationsOccurrences',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary:
        "Each schedule's occurrences between from and to, one list per time zone (device-local: each zone its devices are in)",
      params: a.automationParams,
      query: occurrencesQuery,
      response: a.occurrencesReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listOccurrences(appDb(), caller, params.id, query),
  ),
  'GET /api/v1/automations/{id}/runs': route(
    {
      operationId: 'automationsRuns',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: "An automation's runs, newest first, with their status and counts",
      params: a.automationParams,
      query: a.pageOnly,
      response: a.runPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listRuns(appDb(), caller, params.id, query),
  ),
  'GET /api/v1/automation-runs/{runId}': route(
    {
      operationId: 'automationRunsGet',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: 'A run with its per-device items, their actions and the script runs they started',
      params: a.runParams,
      response: a.run,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getRun(appDb(), caller, params.runId),
  ),
  'POST /api/v1/automations/{id}/webhook-secret': route(
    {
      operationId: 'automationsWebhookSecret',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'automations',
      summary: "Rotate the inbound webhook's HMAC secret: shown once (scripts:write)",
      params: a.automationParams,
      status: 201,
      response: a.webhookSecret,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => rotateWebhookSecret(appDb(), caller, params.id, audit),
  ),
  'POST /api/v1/hooks/automations/{id}': route(
    {
      operationId: 'automationsWebhook',
      grants: ['agent-channel', 'seal-key'],
      auth: 'none',
      tag: 'automations',
      summary:
        'Inbound webhook: signed with the secret as PSA deliveries are (X-Logbook-Timestamp, X-Logbook-Signature); a bad signature, replay or stale timestamp is 401',
      params: a.automationParams,
      status: 202,
      response: a.runStarted,
      errors: [400, 401, 409],
    },
    ({ params, headers, rawBody, audit }) => receiveWebhook(appDb(), params.id, headers, rawBody, audit),
  ),
  'GET /api/v1/devices/{id}/automations': route(
    {
      operationId: 'automationsOfDevice',
      auth: 'userOrApiKey',
      tag: 'automations',
      summary:
        "The automations that apply to a device, with their origin (through the policy resolver) and next occurrence in the device's local time",
      params: h.idParams,
      response: a.deviceAutomations,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => deviceAutomations(appDb(), caller, params.id),
  ),
} as const;
