import { appDb } from '#shared/db/client.ts';
import {
  addMembers,
  createGroup,
  deleteGroup,
  getGroup,
  listGroups,
  listGroupsOfDevice,
  listMembers,
  previewFilter,
  removeMembers,
  updateGroup,
} from '#shared/device-groups/groups.ts';
import { commitGroupImport, previewGroupImport } from '#shared/device-groups/import.ts';
import * as groups from '#shared/device-groups/schemas.ts';
import { route } from '#shared/http/route.ts';

/** The routes of device-groups, each with the one domain call answering it. */
export const routes = {
  // Device groups (docs: README "Device groups"): read with devices:read, changed with devices:write.
  // Audited as device_group.create, .update, .delete, .member.add, .member.remove and .import.
  'POST /api/v1/orgs/organizations/{id}/device-groups': route(
    {
      operationId: 'deviceGroupsGroupsCreate',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary:
        'Create a static or dynamic device group (devices:write); a name taken in the organization is 409 CONFLICT',
      params: groups.orgParams,
      body: groups.createDeviceGroup,
      status: 201,
      response: groups.deviceGroup,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => createGroup(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/device-groups': route(
    {
      operationId: 'deviceGroupsGroupsList',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: "The organization's device groups by name (devices:read)",
      params: groups.orgParams,
      query: groups.listGroupsQuery,
      response: groups.deviceGroupPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listGroups(appDb(), caller, params.id, query),
  ),
  'POST /api/v1/orgs/organizations/{id}/device-groups/preview': route(
    {
      operationId: 'deviceGroupsFilterPreview',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'The devices a filter matches now, without saving it: a first page and the count (devices:read)',
      params: groups.orgParams,
      query: groups.membersQuery,
      body: groups.previewBody,
      response: groups.memberPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, query }) => previewFilter(appDb(), caller, params.id, body, query),
  ),
  'POST /api/v1/orgs/organizations/{id}/device-groups/import/preview': route(
    {
      operationId: 'deviceGroupsImportPreview',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Annotate saved filters of another RMM as dynamic groups; stores nothing (devices:write)',
      params: groups.orgParams,
      body: groups.groupImport,
      maxBodyBytes: 2 * 1024 * 1024,
      response: groups.groupImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body }) => previewGroupImport(appDb(), caller, params.id, body),
  ),
  'POST /api/v1/orgs/organizations/{id}/device-groups/import': route(
    {
      operationId: 'deviceGroupsImportCommit',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary:
        'Import saved filters as dynamic groups, idempotent on (sourceSystem, externalId); rows changed since preview are refused (devices:write)',
      params: groups.orgParams,
      body: groups.groupImport,
      maxBodyBytes: 2 * 1024 * 1024,
      response: groups.groupImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => commitGroupImport(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/device-groups/{groupId}': route(
    {
      operationId: 'deviceGroupsGroupsGet',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Get a device group (devices:read)',
      params: groups.groupParams,
      response: groups.deviceGroup,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getGroup(appDb(), caller, params.groupId),
  ),
  'PATCH /api/v1/device-groups/{groupId}': route(
    {
      operationId: 'deviceGroupsGroupsUpdate',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Rename, move, renest or refilter a device group (devices:write); its type does not change',
      params: groups.groupParams,
      body: groups.updateDeviceGroup,
      response: groups.deviceGroup,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => updateGroup(appDb(), caller, params.groupId, body, audit),
  ),
  'DELETE /api/v1/device-groups/{groupId}': route(
    {
      operationId: 'deviceGroupsGroupsDelete',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Delete a device group for good; its child groups move to the top level (devices:write)',
      params: groups.groupParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteGroup(appDb(), caller, params.groupId, audit),
  ),
  'GET /api/v1/device-groups/{groupId}/members': route(
    {
      operationId: 'deviceGroupsMembersList',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: "A group's member devices, newest first or by hostname (devices:read)",
      params: groups.groupParams,
      query: groups.membersQuery,
      response: groups.memberPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listMembers(appDb(), caller, params.groupId, query),
  ),
  'POST /api/v1/device-groups/{groupId}/members': route(
    {
      operationId: 'deviceGroupsMembersAdd',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Add up to 1,000 devices to a static group, each id on its own (devices:write); a dynamic group is 400',
      params: groups.groupParams,
      body: groups.memberIds,
      response: groups.membersAdded,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => addMembers(appDb(), caller, params.groupId, body.deviceIds, audit),
  ),
  'POST /api/v1/device-groups/{groupId}/members/remove': route(
    {
      operationId: 'deviceGroupsMembersRemove',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'Remove up to 1,000 devices from a static group (devices:write); a dynamic group is 400',
      params: groups.groupParams,
      body: groups.memberIds,
      response: groups.membersRemoved,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => removeMembers(appDb(), caller, params.groupId, body.deviceIds, audit),
  ),
  'GET /api/v1/devices/{id}/groups': route(
    {
      operationId: 'deviceGroupsDeviceGroupsList',
      auth: 'userOrApiKey',
      tag: 'device-groups',
      summary: 'The groups a device belongs to, static and dynamic, by name (devices:read)',
      params: groups.orgParams,
      query: groups.pageOnlyQuery,
      response: groups.deviceGroupPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listGroupsOfDevice(appDb(), caller, params.id, query),
  ),
} as const;
