import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';
import {
  createChannel,
  deleteChannel,
  getChannel,
  listChannels,
  sendTest,
  updateChannel,
} from '#shared/notifications/channels.ts';
import {
  getOrgDefaults,
  getPartnerDefaults,
  putOrgDefaults,
  putPartnerDefaults,
} from '#shared/notifications/defaults.ts';
import { listAlertNotifications } from '#shared/notifications/notify.ts';
import { createPolicy, deletePolicy, getPolicy, listPolicies, updatePolicy } from '#shared/notifications/policies.ts';
import * as n from '#shared/notifications/schemas.ts';

const partnerParams = n.partnerParams;

/** The routes of notification channels, escalation policies, notification defaults and an alert's delivery log. */
export const routes = {
  'POST /api/v1/notification-channels': route(
    {
      operationId: 'notificationsChannelsCreate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary:
        'Create a notification channel (e-mail, signed webhook, Slack, Teams, PagerDuty) of an organization or the partner (integrations:manage)',
      body: n.createChannel,
      status: 201,
      response: n.channel,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createChannel(appDb(), caller, body, audit),
  ),
  'GET /api/v1/notification-channels': route(
    {
      operationId: 'notificationsChannelsList',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Notification channels the caller reaches: its organizations’ and its partner’s (alerts:read)',
      query: n.listQuery,
      response: n.channelPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listChannels(appDb(), caller, query),
  ),
  'GET /api/v1/notification-channels/{channelId}': route(
    {
      operationId: 'notificationsChannelsGet',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Get a notification channel (its secret is never returned)',
      params: n.channelParams,
      response: n.channel,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getChannel(appDb(), caller, params.channelId),
  ),
  'PATCH /api/v1/notification-channels/{channelId}': route(
    {
      operationId: 'notificationsChannelsUpdate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Change a notification channel: name, config, secret (or rotateSecret), throttle',
      params: n.channelParams,
      body: n.updateChannel,
      response: n.channel,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateChannel(appDb(), caller, params.channelId, body, audit),
  ),
  'DELETE /api/v1/notification-channels/{channelId}': route(
    {
      operationId: 'notificationsChannelsDelete',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Delete a notification channel (soft; its delivery log stays)',
      params: n.channelParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteChannel(appDb(), caller, params.channelId, audit),
  ),
  'POST /api/v1/notification-channels/{channelId}/test': route(
    {
      operationId: 'notificationsChannelsTest',
      // Opens the channel's sealed secret to sign, and may send an e-mail.
      grants: ['seal-key', 'send-mail'],
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Send a test notification now, once; the reply is its log entry (delivered, or failed and why)',
      params: n.channelParams,
      response: n.testReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => sendTest(appDb(), caller, params.channelId),
  ),
  'POST /api/v1/escalation-policies': route(
    {
      operationId: 'notificationsPoliciesCreate',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Create an escalation policy: steps { afterMinutes, channelIds } for alerts nobody acknowledges',
      body: n.createPolicy,
      status: 201,
      response: n.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createPolicy(appDb(), caller, body, audit),
  ),
  'GET /api/v1/escalation-policies': route(
    {
      operationId: 'notificationsPoliciesList',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Escalation policies the caller reaches (alerts:read)',
      query: n.listQuery,
      response: n.policyPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listPolicies(appDb(), caller, query),
  ),
  'GET /api/v1/escalation-policies/{policyId}': route(
    {
      operationId: 'notificationsPoliciesGet',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Get an escalation policy',
      params: n.policyParams,
      response: n.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getPolicy(appDb(), caller, params.policyId),
  ),
  'PATCH /api/v1/escalation-policies/{policyId}': route(
    {
      operationId: 'notificationsPoliciesUpdate',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Change an escalation policy (escalations under way read the new steps)',
      params: n.policyParams,
      body: n.updatePolicy,
      response: n.policy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updatePolicy(appDb(), caller, params.policyId, body, audit),
  ),
  'DELETE /api/v1/escalation-policies/{policyId}': route(
    {
      operationId: 'notificationsPoliciesDelete',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: 'Delete an escalation policy (soft; escalations under way stop)',
      params: n.policyParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deletePolicy(appDb(), caller, params.policyId, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/notification-defaults': route(
    {
      operationId: 'notificationsDefaultsOrgGet',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: "The organization's notification defaults, the partner's filling what it has none of its own for",
      params: h.idParams,
      response: n.defaults,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getOrgDefaults(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/notification-defaults': route(
    {
      operationId: 'notificationsDefaultsOrgPut',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: "Set the organization's notification defaults: channel ids per severity, an escalation policy",
      params: h.idParams,
      body: n.putDefaults,
      response: n.defaults,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putOrgDefaults(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/partners/{partnerId}/notification-defaults': route(
    {
      operationId: 'notificationsDefaultsPartnerGet',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: "The partner's notification defaults",
      params: partnerParams,
      response: n.defaults,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getPartnerDefaults(appDb(), caller, params.partnerId),
  ),
  'PUT /api/v1/partners/{partnerId}/notification-defaults': route(
    {
      operationId: 'notificationsDefaultsPartnerPut',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: "Set the partner's notification defaults (partner users)",
      params: partnerParams,
      body: n.putDefaults,
      response: n.defaults,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putPartnerDefaults(appDb(), caller, params.partnerId, body, audit),
  ),
  'GET /api/v1/alerts/{alertId}/notifications': route(
    {
      operationId: 'notificationsAlertLog',
      auth: 'userOrApiKey',
      tag: 'notifications',
      summary: "The alert's notifications per channel with their attempts, and the digests that carried throttled ones",
      params: n.alertParams,
      query: n.pageParams,
      response: n.notificationPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listAlertNotifications(appDb(), caller, params.alertId, query),
  ),
} as const;
