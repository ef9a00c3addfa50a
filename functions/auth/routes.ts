import { auditPartnerChange } from '#shared/audit/partner-audit.ts';
import { type AuditContext, auditChange } from '#shared/audit/writer.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '#shared/auth/api-keys.ts';
import * as keys from '#shared/auth/schemas.ts';
import * as u from '#shared/auth/user-schemas.ts';
import {
  type AuditUserChange,
  changeUserRecord,
  createUserRecord,
  deleteUserRecord,
  listUserRecords,
} from '#shared/auth/users.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';

/**
 * A user change in the trail of the user's organization, or, for a partner user, of every live organization of the
 * partner (the trail is kept per organization).
 */
const auditUser =
  (context: AuditContext): AuditUserChange =>
  (tx, user, event) => {
    const row = { ...event, resourceType: 'user', resourceId: user.id, resourceName: user.email };
    return user.orgId
      ? auditChange(tx, context, { ...row, orgId: user.orgId })
      : auditPartnerChange(tx, context, user.partnerId, row);
  };

/** The routes of auth, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/orgs/organizations/{id}/api-keys': route(
    {
      operationId: 'authApiKeysCreate',
      auth: 'user',
      tag: 'api-keys',
      summary: 'Create an organization API key (lbk_…)',
      params: h.idParams,
      body: keys.createApiKey,
      status: 201,
      response: keys.createdApiKey,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) =>
      createApiKey(appDb(), caller, params.id, body, (tx, event) => auditChange(tx, audit, event)),
  ),
  'GET /api/v1/orgs/organizations/{id}/api-keys': route(
    {
      operationId: 'authApiKeysList',
      auth: 'user',
      tag: 'api-keys',
      summary: 'List API keys (without the keys themselves)',
      params: h.idParams,
      query: h.pageOnlyQuery,
      response: keys.apiKeyPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listApiKeys(appDb(), caller, params.id, query),
  ),
  'DELETE /api/v1/orgs/organizations/{id}/api-keys/{keyId}': route(
    {
      operationId: 'authApiKeysRevoke',
      auth: 'user',
      tag: 'api-keys',
      summary: 'Revoke an API key',
      params: h.keyParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) =>
      revokeApiKey(appDb(), caller, params.id, params.keyId, (tx, event) => auditChange(tx, audit, event)),
  ),
  'POST /api/v1/users': route(
    {
      operationId: 'authUsersCreate',
      auth: 'user',
      grants: ['user-logins'],
      tag: 'users',
      summary: "Invite a user: the partner's (or an organization's) person, with a role",
      body: u.createUser,
      status: 201,
      response: u.user,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, body, audit }) => createUserRecord(appDb(), caller, body, auditUser(audit)),
  ),
  'GET /api/v1/users': route(
    {
      operationId: 'authUsersList',
      auth: 'user',
      tag: 'users',
      summary: 'List the users the caller manages',
      query: u.usersQuery,
      response: u.userPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listUserRecords(appDb(), caller, query),
  ),
  'PATCH /api/v1/users/{id}': route(
    {
      operationId: 'authUsersChange',
      auth: 'user',
      tag: 'users',
      summary: "Change a user's role (and the organization of an organization role)",
      params: u.userParams,
      body: u.changeUser,
      response: u.user,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => changeUserRecord(appDb(), caller, params.id, body, auditUser(audit)),
  ),
  'DELETE /api/v1/users/{id}': route(
    {
      operationId: 'authUsersDelete',
      auth: 'user',
      grants: ['user-logins'],
      tag: 'users',
      summary: 'Delete a user: their tokens no longer carry a role',
      params: u.userParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteUserRecord(appDb(), caller, params.id, auditUser(audit)),
  ),
} as const;
