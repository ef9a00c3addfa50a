import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { reconciliationProgress, uploadReconciliation } from '#shared/reconciliation/reconcile.ts';
import * as reconciliation from '#shared/reconciliation/schemas.ts';

/** The routes of reconciliation, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/orgs/organizations/{id}/reconciliation': route(
    {
      operationId: 'hierarchyReconciliationUpload',
      group: 'hierarchy',
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary:
        "Reconcile the other RMM's device list (up to 10,000) with the enrolled devices (enrollment:manage): enrolled, missing, extra, ambiguous per device; kept, audited as organization.reconciliation.upload",
      params: h.idParams,
      body: reconciliation.reconciliationUpload,
      maxBodyBytes: 6 * 1024 * 1024,
      status: 201,
      response: reconciliation.reconciliation,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => uploadReconciliation(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/reconciliation': route(
    {
      operationId: 'hierarchyReconciliationGet',
      group: 'hierarchy',
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary: "The latest reconciliation's states and every upload's counts over time (devices:read)",
      params: h.idParams,
      response: reconciliation.reconciliationProgress,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => reconciliationProgress(appDb(), caller, params.id),
  ),
} as const;
