import * as fields from '#shared/custom-fields/schemas.ts';
import { getDeviceWithFields } from '#shared/custom-fields/values.ts';
import { appDb } from '#shared/db/client.ts';
import * as groups from '#shared/device-groups/schemas.ts';
import { summarizeDevices } from '#shared/device-groups/summaries.ts';
import { deploymentScript } from '#shared/hierarchy/deployment-script.ts';
import { deleteDevice, listDevices, updateDevice } from '#shared/hierarchy/devices.ts';
import {
  createEnrollmentKey,
  enrollAgent,
  listEnrollmentKeys,
  revokeEnrollmentKey,
} from '#shared/hierarchy/enrollment.ts';
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  listOrganizations,
  updateOrganization,
} from '#shared/hierarchy/organizations.ts';
import { createPartner, listPartners } from '#shared/hierarchy/partners.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { createSite, deleteSite, getSite, listSites, updateSite } from '#shared/hierarchy/sites.ts';
import { fileDownload } from '#shared/http/download.ts';
import { publicApiUrl } from '#shared/http/public-url.ts';
import { route } from '#shared/http/route.ts';

/** The routes of hierarchy, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/partners': route(
    {
      operationId: 'hierarchyPartnersCreate',
      auth: 'user',
      tag: 'hierarchy',
      summary: 'Create a partner (platform_admin)',
      body: h.createPartner,
      status: 201,
      response: h.partner,
      errors: [400, 401, 403],
    },
    ({ caller, body }) => createPartner(appDb(), caller, body),
  ),
  'GET /api/v1/partners': route(
    {
      operationId: 'hierarchyPartnersList',
      auth: 'user',
      tag: 'hierarchy',
      summary: 'List partners (platform_admin)',
      query: h.listPartnersQuery,
      response: h.partnerPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listPartners(appDb(), caller, query),
  ),
  'POST /api/v1/orgs/organizations': route(
    {
      operationId: 'hierarchyOrganizationsCreate',
      auth: 'user',
      tag: 'hierarchy',
      summary: 'Create an organization and its first site',
      body: h.createOrganization,
      status: 201,
      response: h.createdOrganization,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body }) => createOrganization(appDb(), caller, body),
  ),
  'GET /api/v1/orgs/organizations': route(
    {
      operationId: 'hierarchyOrganizationsList',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'List the organizations the caller may reach',
      query: h.listOrganizationsQuery,
      response: h.organizationPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listOrganizations(appDb(), caller, query),
  ),
  'GET /api/v1/orgs/organizations/{id}': route(
    {
      operationId: 'hierarchyOrganizationsGet',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Get an organization',
      params: h.idParams,
      response: h.organization,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getOrganization(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/orgs/organizations/{id}': route(
    {
      operationId: 'hierarchyOrganizationsUpdate',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Change an organization',
      params: h.idParams,
      body: h.updateOrganization,
      response: h.organization,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateOrganization(appDb(), caller, params.id, body, audit),
  ),
  'DELETE /api/v1/orgs/organizations/{id}': route(
    {
      operationId: 'hierarchyOrganizationsDelete',
      auth: 'user',
      tag: 'hierarchy',
      summary: 'Delete an organization (soft: its audit trail stays readable to the partner)',
      params: h.idParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteOrganization(appDb(), caller, params.id, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/sites': route(
    {
      operationId: 'hierarchySitesList',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'List the sites of an organization',
      params: h.idParams,
      query: h.pageOnlyQuery,
      response: h.sitePage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listSites(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/orgs/organizations/{id}/sites': route(
    {
      operationId: 'hierarchySitesCreate',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Create a site',
      params: h.idParams,
      body: h.createSite,
      status: 201,
      response: h.site,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => createSite(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/sites/{siteId}': route(
    {
      operationId: 'hierarchySitesGet',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Get a site',
      params: h.siteParams,
      response: h.site,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getSite(appDb(), caller, params.id, params.siteId),
  ),
  'PATCH /api/v1/orgs/organizations/{id}/sites/{siteId}': route(
    {
      operationId: 'hierarchySitesUpdate',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Change a site',
      params: h.siteParams,
      body: h.updateSite,
      response: h.site,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateSite(appDb(), caller, params.id, params.siteId, body, audit),
  ),
  'DELETE /api/v1/orgs/organizations/{id}/sites/{siteId}': route(
    {
      operationId: 'hierarchySitesDelete',
      auth: 'userOrApiKey',
      tag: 'hierarchy',
      summary: 'Delete a site; 409 LAST_SITE for the last one, 409 SITE_NOT_EMPTY while devices remain',
      params: h.siteParams,
      status: 204,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => deleteSite(appDb(), caller, params.id, params.siteId, audit),
  ),
  'POST /api/v1/orgs/organizations/{id}/enrollment-keys': route(
    {
      operationId: 'hierarchyEnrollmentKeysCreate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary: 'Create an enrollment key for the organization or one of its sites',
      params: h.idParams,
      body: h.createEnrollmentKey,
      status: 201,
      response: h.createdEnrollmentKey,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => createEnrollmentKey(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/enrollment-keys': route(
    {
      operationId: 'hierarchyEnrollmentKeysList',
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary: 'List enrollment keys (without the keys themselves)',
      params: h.idParams,
      query: h.pageOnlyQuery,
      response: h.enrollmentKeyPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listEnrollmentKeys(appDb(), caller, params.id, query),
  ),
  'DELETE /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}': route(
    {
      operationId: 'hierarchyEnrollmentKeysRevoke',
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary: 'Revoke an enrollment key',
      params: h.keyParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => revokeEnrollmentKey(appDb(), caller, params.id, params.keyId, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}/deployment-script': route(
    {
      operationId: 'hierarchyEnrollmentKeysScript',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'enrollment',
      summary:
        "The key's deployment script (enrollment:manage): PowerShell or POSIX sh, a no-op once agent.yaml exists, locked against concurrent runs, exit codes 0 enrolled or already, 2 refused, 3 unreachable, 1 other (docs/enrollment-scripts.md)",
      params: h.keyParams,
      query: h.deploymentScriptQuery,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, query, headers }) =>
      deploymentScript(
        appDb(),
        caller,
        params.id,
        params.keyId,
        query.platform,
        publicApiUrl(headers),
        fileDownload(headers['accept-encoding']),
      ),
  ),
  'POST /api/v1/agents/enroll': route(
    {
      operationId: 'hierarchyAgentsEnroll',
      grants: ['enrollment-secret'],
      auth: 'none',
      tag: 'enrollment',
      summary: 'Enroll an agent with an enrollment key (and the enrollment secret when one is configured)',
      body: h.enroll,
      status: 201,
      response: h.enrolled,
      errors: [400, 401],
    },
    ({ body, audit }) => enrollAgent(appDb(), body, audit),
  ),
  'GET /api/v1/devices': route(
    {
      operationId: 'hierarchyDevicesList',
      auth: 'userOrApiKey',
      tag: 'devices',
      summary: 'List devices the caller may reach; cf.<key>=<value> keeps those whose custom field holds the value',
      query: h.listDevicesQuery,
      response: h.devicePage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listDevices(appDb(), caller, query),
  ),
  'POST /api/v1/orgs/organizations/{id}/device-summaries': route(
    {
      operationId: 'hierarchyDeviceSummaries',
      auth: 'userOrApiKey',
      tag: 'devices',
      summary:
        "Beside each device of a list's page: open alerts, groups and custom fields, for up to 100 devices of the organization (devices:read); reads only",
      params: h.idParams,
      body: groups.summariesBody,
      response: groups.deviceSummaries,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body }) => summarizeDevices(appDb(), caller, params.id, body),
  ),
  'GET /api/v1/devices/{id}': route(
    {
      operationId: 'hierarchyDevicesGet',
      auth: 'userOrApiKey',
      tag: 'devices',
      summary: 'Get a device, with its custom fields (customFields: { key: value })',
      params: h.idParams,
      response: fields.deviceDetail,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getDeviceWithFields(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/devices/{id}': route(
    {
      operationId: 'hierarchyDevicesUpdate',
      auth: 'userOrApiKey',
      tag: 'devices',
      summary: 'Rename a device or move it to another site of its organization',
      params: h.idParams,
      body: h.updateDevice,
      response: h.device,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateDevice(appDb(), caller, params.id, body, audit),
  ),
  'DELETE /api/v1/devices/{id}': route(
    {
      operationId: 'hierarchyDevicesDelete',
      auth: 'userOrApiKey',
      tag: 'devices',
      summary: 'Delete a device (soft) and revoke its agent token',
      params: h.idParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteDevice(appDb(), caller, params.id, audit),
  ),
} as const;
