import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';
import { exportBundle, importBundle, previewBundle } from '#shared/scripts/bundle.ts';
import {
  createScript,
  deleteScript,
  getScript,
  listScripts,
  listScriptVersions,
  updateScript,
} from '#shared/scripts/library.ts';
import { cancelRun, getRun, listRunItems, startRun } from '#shared/scripts/runs.ts';
import * as scripts from '#shared/scripts/schemas.ts';

/** The routes of scripts, each with the one domain call answering it. */
export const routes = {
  // Scripts: the library, versions, bundles, and runs relayed to agents.
  'POST /api/v1/scripts': route(
    {
      operationId: 'scriptsScriptsCreate',
      // Seals the default of a secret parameter.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary:
        'Create a script in an organization (orgId) or for the whole partner (availability "partner") (scripts:write)',
      body: scripts.createScript,
      maxBodyBytes: 2 * 1024 * 1024,
      status: 201,
      response: scripts.script,
      errors: [400, 401, 403, 404, 409, 413],
    },
    ({ caller, body, audit }) => createScript(appDb(), caller, body, audit),
  ),
  'GET /api/v1/scripts': route(
    {
      operationId: 'scriptsScriptsList',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'List the scripts the caller reaches, partner scripts included (scripts:read)',
      query: scripts.listScriptsQuery,
      response: scripts.scriptPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listScripts(appDb(), caller, query),
  ),
  'GET /api/v1/scripts/{scriptId}': route(
    {
      operationId: 'scriptsScriptsGet',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'Get a script with its content (scripts:read)',
      params: scripts.scriptParams,
      response: scripts.script,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getScript(appDb(), caller, params.scriptId),
  ),
  'PATCH /api/v1/scripts/{scriptId}': route(
    {
      operationId: 'scriptsScriptsUpdate',
      // Seals the default of a secret parameter.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary:
        'Change a script; new content or parameters make a new version (scripts:write; partner scripts: partner users)',
      params: scripts.scriptParams,
      body: scripts.updateScript,
      maxBodyBytes: 2 * 1024 * 1024,
      response: scripts.script,
      errors: [400, 401, 403, 404, 409, 413],
    },
    ({ caller, params, body, audit }) => updateScript(appDb(), caller, params.scriptId, body, audit),
  ),
  'DELETE /api/v1/scripts/{scriptId}': route(
    {
      operationId: 'scriptsScriptsDelete',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'Delete a script (soft: runs and the trail keep pointing at it)',
      params: scripts.scriptParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteScript(appDb(), caller, params.scriptId, audit),
  ),
  'GET /api/v1/scripts/{scriptId}/versions': route(
    {
      operationId: 'scriptsScriptsVersions',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: "A script's versions, newest first, with their content (scripts:read)",
      params: scripts.scriptParams,
      query: scripts.versionsQuery,
      response: scripts.scriptVersionPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listScriptVersions(appDb(), caller, params.scriptId, query),
  ),
  'POST /api/v1/scripts/bundle/preview': route(
    {
      operationId: 'scriptsBundlePreview',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'Preview a script bundle: each script new, name-conflict or invalid with its reasons (scripts:write)',
      body: scripts.previewBundle,
      maxBodyBytes: scripts.bundleLimits.bytes + 64 * 1024,
      response: scripts.bundlePreview,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body }) => previewBundle(appDb(), caller, body),
  ),
  'POST /api/v1/scripts/bundle/import': route(
    {
      operationId: 'scriptsBundleImport',
      // Seals the default of a secret parameter.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary:
        'Import a script bundle into an organization or the partner; conflicts skipped, renamed or made new versions',
      body: scripts.importBundle,
      maxBodyBytes: scripts.bundleLimits.bytes + 64 * 1024,
      response: scripts.bundleImportResult,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body, audit }) => importBundle(appDb(), caller, body, audit),
  ),
  'GET /api/v1/scripts/bundle/export': route(
    {
      operationId: 'scriptsBundleExport',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'Export scripts as a bundle without tenant identifiers (scripts:read)',
      query: scripts.exportQuery,
      response: scripts.exportedBundle,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => exportBundle(appDb(), caller, query.ids),
  ),
  'POST /api/v1/scripts/{scriptId}/runs': route(
    {
      operationId: 'scriptsRunsStart',
      // Opens the sealed default of a secret parameter the run does not give.
      grants: ['agent-channel', 'seal-key'],
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary:
        'Run a script on devices (scripts:run): 202 with the run; online devices get it at once, offline ones when their agent connects',
      params: scripts.scriptParams,
      body: scripts.startRun,
      status: 202,
      response: scripts.scriptRun,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body }) => startRun(appDb(), caller, params.scriptId, body),
  ),
  'GET /api/v1/script-runs/{runId}': route(
    {
      operationId: 'scriptsRunsGet',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: 'A script run with its items counted by status (scripts:read)',
      params: scripts.runParams,
      response: scripts.scriptRun,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getRun(appDb(), caller, params.runId),
  ),
  'GET /api/v1/script-runs/{runId}/items': route(
    {
      operationId: 'scriptsRunsItems',
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: "A script run's items: status, exit code, duration, output (scripts:read)",
      params: scripts.runParams,
      query: scripts.runItemsQuery,
      response: scripts.runItemPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listRunItems(appDb(), caller, params.runId, query),
  ),
  'POST /api/v1/script-runs/{runId}/cancel': route(
    {
      operationId: 'scriptsRunsCancel',
      grants: ['agent-channel'],
      auth: 'userOrApiKey',
      tag: 'scripts',
      summary: "Cancel a script run's pending items (scripts:run)",
      params: scripts.runParams,
      response: scripts.scriptRun,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => cancelRun(appDb(), caller, params.runId),
  ),
} as const;
