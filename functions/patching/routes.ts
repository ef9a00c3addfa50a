import * as agents from '#shared/agents/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { fileDownload } from '#shared/http/download.ts';
import { route } from '#shared/http/route.ts';
import { bulkApprove, decidePatch, getPatch, listPatches } from '#shared/patching/catalogue.ts';
import { devicePatches, partnerPatchCompliance, patchCompliance } from '#shared/patching/compliance.ts';
import { uploadInventory } from '#shared/patching/inventory.ts';
import {
  getJob,
  listJobs,
  promotePatches,
  ringStatus,
  runRingNow,
  setRingPaused,
} from '#shared/patching/ring-actions.ts';
import * as p from '#shared/patching/schemas.ts';

const tag = 'patching';
/** Patching is a kind of policy: its routes are served by the policies function (the agent's by the agents one). */
const group = 'policies';

const decision = (verb: 'approve' | 'decline', decided: 'approved' | 'declined') =>
  route(
    {
      operationId: `patching${verb === 'approve' ? 'Approve' : 'Decline'}`,
      group,
      auth: 'userOrApiKey',
      tag,
      summary: `${verb === 'approve' ? 'Approve' : 'Decline'} a patch for the partner or an organization, for every ring or one (patching:manage); audited as patch.${verb}`,
      params: p.idParams,
      body: p.decideBody,
      response: p.decision,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => decidePatch(appDb(), caller, params.id, body, decided, audit),
  );

const pause = (paused: boolean) =>
  route(
    {
      operationId: paused ? 'patchingRingPause' : 'patchingRingResume',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: `${paused ? 'Pause' : 'Resume'} a ring's occurrences (patching:manage); audited as patch.ring.${paused ? 'pause' : 'resume'}`,
      params: p.ringParams,
      response: p.ringState,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => setRingPaused(appDb(), caller, params.ringId, paused, audit),
  );

/** The routes of patching, each with the one domain call answering it. */
export const routes = {
  'PUT /api/v1/agents/{id}/patch-inventory': route(
    {
      operationId: 'agentsPatchInventory',
      group: 'agents',
      auth: 'agent',
      tag,
      summary:
        "A complete scan of one source: replaces what the device's previous scan of that source listed (what it no longer lists is gone); an older scan changes nothing",
      params: agents.agentParams,
      body: p.inventoryUpload,
      maxBodyBytes: 4 * 1024 * 1024,
      response: p.inventoryReceipt,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body }) => uploadInventory(appDb(), caller, params.id, body),
  ),
  'GET /api/v1/patches': route(
    {
      operationId: 'patchingList',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: "The partner's patch catalogue with counts of devices by state (patching:read)",
      query: p.listPatchesQuery,
      response: p.patchPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => listPatches(appDb(), caller, query),
  ),
  'GET /api/v1/patches/{id}': route(
    {
      operationId: 'patchingGet',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: 'A patch with its counts and the manual decisions on it (patching:read)',
      params: p.idParams,
      query: p.patchOrgQuery,
      response: p.patchDetail,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => getPatch(appDb(), caller, params.id, query.orgId),
  ),
  'POST /api/v1/patches/bulk/approve': route(
    {
      operationId: 'patchingBulkApprove',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: 'Approve several patches at once, all or none (patching:manage); each audited as patch.approve',
      body: p.bulkApproveBody,
      response: p.bulkApproveReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => bulkApprove(appDb(), caller, body, audit),
  ),
  'POST /api/v1/patches/{id}/approve': decision('approve', 'approved'),
  'POST /api/v1/patches/{id}/decline': decision('decline', 'declined'),
  'POST /api/v1/patches/{id}/defer': route(
    {
      operationId: 'patchingDefer',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: 'Defer a patch until a time (patching:manage); overrides the approval rules; audited as patch.defer',
      params: p.idParams,
      body: p.deferBody,
      response: p.decision,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => decidePatch(appDb(), caller, params.id, body, 'deferred', audit),
  ),
  'POST /api/v1/patch-rings/{ringId}/pause': pause(true),
  'POST /api/v1/patch-rings/{ringId}/resume': pause(false),
  'POST /api/v1/patch-rings/{ringId}/promote': route(
    {
      operationId: 'patchingRingPromote',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: "Pass patches through this ring's gate by hand: the next ring may take them (patching:manage)",
      params: p.ringParams,
      body: p.promoteBody,
      response: p.promoteReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => promotePatches(appDb(), caller, params.ringId, body.patchIds, audit),
  ),
  'POST /api/v1/patch-rings/{ringId}/run-now': route(
    {
      operationId: 'patchingRingRunNow',
      group,
      auth: 'userOrApiKey',
      tag,
      summary:
        'An occurrence of the ring now, keyed by its Idempotency-Key (patching:manage): 202 with the job; 409 while the ring is paused',
      params: p.ringParams,
      status: 202,
      response: p.jobAccepted,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, headers, audit }) =>
      runRingNow(appDb(), caller, params.ringId, headers['idempotency-key'], audit),
  ),
  'GET /api/v1/patch-rings/{ringId}/status': route(
    {
      operationId: 'patchingRingStatus',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: "A ring's devices, next occurrence and, per patch, its promotion gate's numbers (patching:read)",
      params: p.ringParams,
      response: p.ringStatus,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => ringStatus(appDb(), caller, params.ringId),
  ),
  'GET /api/v1/patch-jobs': route(
    {
      operationId: 'patchingJobsList',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: 'Install jobs, newest first (patching:read)',
      query: p.listJobsQuery,
      response: p.jobPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => listJobs(appDb(), caller, query),
  ),
  'GET /api/v1/patch-jobs/{jobId}': route(
    {
      operationId: 'patchingJobsGet',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: 'An install job with each device, what it was sent and its results (patching:read)',
      params: p.jobParams,
      response: p.jobDetail,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getJob(appDb(), caller, params.jobId),
  ),
  'GET /api/v1/orgs/organizations/{id}/patch-compliance': route(
    {
      operationId: 'patchingCompliance',
      group,
      auth: 'userOrApiKey',
      tag,
      summary:
        "An organization's patch compliance by device and pair, per ring, with the daily trend (patching:read); format=csv downloads the devices",
      params: h.idParams,
      query: p.organizationComplianceQuery,
      download: { textTypes: ['text/csv'], jsonReply: true },
      response: p.compliance,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query, headers }) =>
      patchCompliance(appDb(), caller, params.id, query, fileDownload(headers['accept-encoding'])),
  ),
  'GET /api/v1/partners/{partnerId}/patch-compliance': route(
    {
      operationId: 'patchingPartnerCompliance',
      group,
      auth: 'userOrApiKey',
      tag,
      summary:
        "A partner's patch compliance across its organizations: totals, per ring and per organization, with the summed daily trend (patching:read); format=csv downloads the organizations",
      params: p.partnerParams,
      query: p.complianceQuery,
      download: { textTypes: ['text/csv'], jsonReply: true },
      response: p.partnerCompliance,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query, headers }) =>
      partnerPatchCompliance(appDb(), caller, params.partnerId, query, fileDownload(headers['accept-encoding'])),
  ),
  'GET /api/v1/devices/{id}/patches': route(
    {
      operationId: 'patchingDevicePatches',
      group,
      auth: 'userOrApiKey',
      tag,
      summary: "What the device's latest scans list, with each patch's approval for its ring (patching:read)",
      params: h.idParams,
      response: p.devicePatches,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => devicePatches(appDb(), caller, params.id),
  ),
} as const;
