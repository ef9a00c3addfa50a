import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import { armPolicyRings } from '#shared/patching/install.ts';
import {
  createAssignment,
  createExemption,
  createPolicy,
  deleteAssignment,
  deleteExemption,
  deletePolicy,
  getEffectivePolicies,
  listAssignments,
  listExemptions,
  listPolicies,
  listVersions,
  putInheritanceBlock,
  reachablePolicy,
  updatePolicy,
} from '#shared/policies/policies.ts';
import * as p from '#shared/policies/schemas.ts';

/** A patching policy's rings arm their next occurrences once it is stored. */
async function armedRings<T extends { id: string; kind: string }>(policy: Promise<T>): Promise<T> {
  const stored = await policy;
  if (stored.kind === 'patching') await armPolicyRings(appDb(), stored.id);
  return stored;
}

const tag = 'policies';

/** The routes of policies, their assignments, exemptions and inheritance blocks, each with the one domain call. */
export const routes = {
  'POST /api/v1/policies': route(
    {
      operationId: 'policiesCreate',
      auth: 'userOrApiKey',
      tag,
      summary:
        'Create a policy of an organization (orgId) or a partner library (availability partner) (policies:write); audited as policy.create',
      body: p.createPolicy,
      status: 201,
      response: p.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => armedRings(createPolicy(appDb(), caller, body, audit)),
  ),
  'GET /api/v1/policies': route(
    {
      operationId: 'policiesList',
      auth: 'userOrApiKey',
      tag,
      summary: 'Policies the caller reaches, by name (policies:read)',
      query: p.listPoliciesQuery,
      response: p.policyPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listPolicies(appDb(), caller, query),
  ),
  'GET /api/v1/policies/{id}': route(
    {
      operationId: 'policiesGet',
      auth: 'userOrApiKey',
      tag,
      summary: 'Get a policy with its items (policies:read)',
      params: p.policyParams,
      response: p.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => reachablePolicy(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/policies/{id}': route(
    {
      operationId: 'policiesUpdate',
      auth: 'userOrApiKey',
      tag,
      summary:
        'Change name or items (policies:write); a change of the items is a new version; audited as policy.update with before and after',
      params: p.policyParams,
      body: p.updatePolicy,
      response: p.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => armedRings(updatePolicy(appDb(), caller, params.id, body, audit)),
  ),
  'DELETE /api/v1/policies/{id}': route(
    {
      operationId: 'policiesDelete',
      auth: 'userOrApiKey',
      tag,
      summary: 'Delete a policy with its assignments and exemptions (policies:write); audited as policy.delete',
      params: p.policyParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deletePolicy(appDb(), caller, params.id, audit),
  ),
  'GET /api/v1/policies/{id}/versions': route(
    {
      operationId: 'policiesVersions',
      auth: 'userOrApiKey',
      tag,
      summary: "The policy's versions, newest first (policies:read)",
      params: p.policyParams,
      query: p.pageOnly,
      response: p.policyVersionPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listVersions(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/policies/{id}/assignments': route(
    {
      operationId: 'policiesAssignmentsCreate',
      auth: 'userOrApiKey',
      tag,
      summary:
        'Assign the policy to the partner, an organization, a site, a device group or a device (policies:write); 409 when assigned there already',
      params: p.policyParams,
      body: p.createAssignment,
      status: 201,
      response: p.assignment,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => createAssignment(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/policies/{id}/assignments': route(
    {
      operationId: 'policiesAssignmentsList',
      auth: 'userOrApiKey',
      tag,
      summary: "The policy's assignments (policies:read; organization callers see their organization's)",
      params: p.policyParams,
      query: p.pageOnly,
      response: p.assignmentPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listAssignments(appDb(), caller, params.id, query),
  ),
  'DELETE /api/v1/policy-assignments/{id}': route(
    {
      operationId: 'policiesAssignmentsDelete',
      auth: 'userOrApiKey',
      tag,
      summary: 'Remove an assignment (policies:write); audited as policy.update',
      params: p.assignmentParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteAssignment(appDb(), caller, params.id, audit),
  ),
  'POST /api/v1/policies/{id}/exemptions': route(
    {
      operationId: 'policiesExemptionsCreate',
      auth: 'userOrApiKey',
      tag,
      summary:
        "Exempt a device, a site's devices or a group's members from one item of the policy, with a reason (policies:write)",
      params: p.policyParams,
      body: p.createExemption,
      status: 201,
      response: p.exemption,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => createExemption(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/policies/{id}/exemptions': route(
    {
      operationId: 'policiesExemptionsList',
      auth: 'userOrApiKey',
      tag,
      summary: "The policy's exemptions (policies:read)",
      params: p.policyParams,
      query: p.pageOnly,
      response: p.exemptionPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listExemptions(appDb(), caller, params.id, query),
  ),
  'DELETE /api/v1/policy-exemptions/{id}': route(
    {
      operationId: 'policiesExemptionsDelete',
      auth: 'userOrApiKey',
      tag,
      summary: 'Remove an exemption (policies:write); audited as policy.update',
      params: p.assignmentParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteExemption(appDb(), caller, params.id, audit),
  ),
  'PUT /api/v1/orgs/organizations/{id}/policy-inheritance': route(
    {
      operationId: 'policiesInheritanceOrg',
      auth: 'userOrApiKey',
      tag,
      summary:
        "Block (or unblock) the partner's assignments at this organization (policies:write, partner users); audited as policy.update",
      params: h.idParams,
      body: p.putInheritance,
      response: p.inheritance,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putInheritanceBlock(appDb(), caller, params.id, null, body, audit),
  ),
  'PUT /api/v1/orgs/organizations/{id}/sites/{siteId}/policy-inheritance': route(
    {
      operationId: 'policiesInheritanceSite',
      auth: 'userOrApiKey',
      tag,
      summary:
        "Block (or unblock) the partner's and the organization's assignments at this site (policies:write, partner users)",
      params: p.siteInheritanceParams,
      body: p.putInheritance,
      response: p.inheritance,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putInheritanceBlock(appDb(), caller, params.id, params.siteId, body, audit),
  ),
  'GET /api/v1/devices/{id}/effective-policies': route(
    {
      operationId: 'policiesEffective',
      auth: 'userOrApiKey',
      tag,
      summary:
        'What applies to the device for one kind (default monitoring): each item with the policy, version and assignment it came from, what it overrode, what was exempted or blocked',
      params: h.idParams,
      query: p.effectiveQuery,
      response: p.effectivePolicies,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => getEffectivePolicies(appDb(), caller, params.id, query.kind),
  ),
} as const;
