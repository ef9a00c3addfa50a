/**
 * The one route table. The local API Gateway (infra/local) and the CDK stack both
 * read it; the OpenAPI document is generated from its schemas. Paths use API
 * Gateway's `{name}` parameters.
 */
import { z } from 'zod';
import * as keys from '#shared/auth/schemas.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route, type RouteDef } from '#shared/http/route.ts';

const health = z.object({ status: z.literal('ok') });

export const routes = {
  'GET /api/v1/health': route({ handler: 'system/health', auth: 'none', tag: 'system', summary: 'Readiness: 200 once the database answers', response: health, errors: [503] }),
  'GET /api/v1/openapi.json': route({ handler: 'system/openapi', auth: 'none', tag: 'system', summary: 'This OpenAPI 3.1 document' }),

  'POST /api/v1/partners': route({ handler: 'hierarchy/partners-create', auth: 'user', tag: 'hierarchy', summary: 'Create a partner (platform_admin)', body: h.createPartner, status: 201, response: h.partner, errors: [400, 401, 403] }),
  'GET /api/v1/partners': route({ handler: 'hierarchy/partners-list', auth: 'user', tag: 'hierarchy', summary: 'List partners (platform_admin)', query: h.listPartnersQuery, response: h.partnerPage, errors: [400, 401, 403] }),

  'POST /api/v1/orgs/organizations': route({ handler: 'hierarchy/organizations-create', auth: 'user', tag: 'hierarchy', summary: 'Create an organization and its first site', body: h.createOrganization, status: 201, response: h.createdOrganization, errors: [400, 401, 403, 404] }),
  'GET /api/v1/orgs/organizations': route({ handler: 'hierarchy/organizations-list', auth: 'principal', tag: 'hierarchy', summary: 'List the organizations the caller may reach', query: h.listOrganizationsQuery, response: h.organizationPage, errors: [400, 401, 403] }),
  'GET /api/v1/orgs/organizations/{id}': route({ handler: 'hierarchy/organizations-get', auth: 'principal', tag: 'hierarchy', summary: 'Get an organization', params: h.idParams, response: h.organization, errors: [400, 401, 403, 404] }),
  'PATCH /api/v1/orgs/organizations/{id}': route({ handler: 'hierarchy/organizations-update', auth: 'principal', tag: 'hierarchy', summary: 'Change an organization', params: h.idParams, body: h.updateOrganization, response: h.organization, errors: [400, 401, 403, 404] }),
  'DELETE /api/v1/orgs/organizations/{id}': route({ handler: 'hierarchy/organizations-delete', auth: 'user', tag: 'hierarchy', summary: 'Delete an organization (soft: its audit trail stays readable to the partner)', params: h.idParams, status: 204, errors: [400, 401, 403, 404] }),

  'GET /api/v1/orgs/organizations/{id}/sites': route({ handler: 'hierarchy/sites-list', auth: 'principal', tag: 'hierarchy', summary: 'List the sites of an organization', params: h.idParams, query: h.pageOnlyQuery, response: h.sitePage, errors: [400, 401, 403, 404] }),
  'POST /api/v1/orgs/organizations/{id}/sites': route({ handler: 'hierarchy/sites-create', auth: 'principal', tag: 'hierarchy', summary: 'Create a site', params: h.idParams, body: h.createSite, status: 201, response: h.site, errors: [400, 401, 403, 404] }),
  'GET /api/v1/orgs/organizations/{id}/sites/{siteId}': route({ handler: 'hierarchy/sites-get', auth: 'principal', tag: 'hierarchy', summary: 'Get a site', params: h.siteParams, response: h.site, errors: [400, 401, 403, 404] }),
  'PATCH /api/v1/orgs/organizations/{id}/sites/{siteId}': route({ handler: 'hierarchy/sites-update', auth: 'principal', tag: 'hierarchy', summary: 'Change a site', params: h.siteParams, body: h.updateSite, response: h.site, errors: [400, 401, 403, 404] }),
  'DELETE /api/v1/orgs/organizations/{id}/sites/{siteId}': route({ handler: 'hierarchy/sites-delete', auth: 'principal', tag: 'hierarchy', summary: 'Delete a site; 409 LAST_SITE for the last one, 409 SITE_NOT_EMPTY while devices remain', params: h.siteParams, status: 204, errors: [400, 401, 403, 404, 409] }),

  'POST /api/v1/orgs/organizations/{id}/enrollment-keys': route({ handler: 'hierarchy/enrollment-keys-create', auth: 'principal', tag: 'enrollment', summary: 'Create an enrollment key for the organization or one of its sites', params: h.idParams, body: h.createEnrollmentKey, status: 201, response: h.createdEnrollmentKey, errors: [400, 401, 403, 404] }),
  'GET /api/v1/orgs/organizations/{id}/enrollment-keys': route({ handler: 'hierarchy/enrollment-keys-list', auth: 'principal', tag: 'enrollment', summary: 'List enrollment keys (without the keys themselves)', params: h.idParams, query: h.pageOnlyQuery, response: h.enrollmentKeyPage, errors: [400, 401, 403, 404] }),
  'DELETE /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}': route({ handler: 'hierarchy/enrollment-keys-revoke', auth: 'principal', tag: 'enrollment', summary: 'Revoke an enrollment key', params: h.keyParams, status: 204, errors: [400, 401, 403, 404] }),
  'POST /api/v1/agents/enroll': route({ handler: 'hierarchy/agents-enroll', auth: 'none', tag: 'enrollment', summary: 'Enroll an agent with an enrollment key (and the enrollment secret when one is configured)', body: h.enroll, status: 201, response: h.enrolled, errors: [400, 401] }),

  'POST /api/v1/orgs/organizations/{id}/api-keys': route({ handler: 'auth/api-keys-create', auth: 'user', tag: 'api-keys', summary: 'Create an organization API key (lbk_…)', params: h.idParams, body: keys.createApiKey, status: 201, response: keys.createdApiKey, errors: [400, 401, 403, 404] }),
  'GET /api/v1/orgs/organizations/{id}/api-keys': route({ handler: 'auth/api-keys-list', auth: 'user', tag: 'api-keys', summary: 'List API keys (without the keys themselves)', params: h.idParams, query: h.pageOnlyQuery, response: keys.apiKeyPage, errors: [400, 401, 403, 404] }),
  'DELETE /api/v1/orgs/organizations/{id}/api-keys/{keyId}': route({ handler: 'auth/api-keys-revoke', auth: 'user', tag: 'api-keys', summary: 'Revoke an API key', params: h.keyParams, status: 204, errors: [400, 401, 403, 404] }),

  'GET /api/v1/devices': route({ handler: 'hierarchy/devices-list', auth: 'principal', tag: 'devices', summary: 'List devices the caller may reach', query: h.listDevicesQuery, response: h.devicePage, errors: [400, 401, 403] }),
  'GET /api/v1/devices/{id}': route({ handler: 'hierarchy/devices-get', auth: 'principal', tag: 'devices', summary: 'Get a device', params: h.idParams, response: h.device, errors: [400, 401, 403, 404] }),
  'PATCH /api/v1/devices/{id}': route({ handler: 'hierarchy/devices-update', auth: 'principal', tag: 'devices', summary: 'Rename a device or move it to another site of its organization', params: h.idParams, body: h.updateDevice, response: h.device, errors: [400, 401, 403, 404] }),
  'DELETE /api/v1/devices/{id}': route({ handler: 'hierarchy/devices-delete', auth: 'principal', tag: 'devices', summary: 'Delete a device (soft) and revoke its agent token', params: h.idParams, status: 204, errors: [400, 401, 403, 404] }),

} as const satisfies Record<string, RouteDef>;

export type RouteKey = keyof typeof routes;
