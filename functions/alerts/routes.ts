import { acknowledgeAlert, getAlert, listAlerts, listDeliveries, resolveAlert } from '#shared/alerts/alerts.ts';
import { getOrgBinding, getPartnerBinding, putOrgBinding, putPartnerBinding } from '#shared/alerts/bindings.ts';
import { changeAlerts } from '#shared/alerts/bulk.ts';
import {
  createIntegration,
  deleteIntegration,
  getIntegration,
  listIntegrations,
  updateIntegration,
} from '#shared/alerts/integrations.ts';
import * as alerts from '#shared/alerts/schemas.ts';
import { getTicket, listTickets } from '#shared/alerts/tickets.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { route } from '#shared/http/route.ts';

/** The routes of alerts, each with the one domain call answering it. */
export const routes = {
  // Alerts, tickets, alert bindings and PSA integrations.
  'GET /api/v1/alerts': route(
    {
      operationId: 'alertsAlertsList',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary:
        'Alerts the caller reaches, newest first, filtered by organization, status, severity, site, device, source and time (alerts:read)',
      query: alerts.listAlertsQuery,
      response: alerts.alertPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listAlerts(appDb(), caller, query),
  ),
  'GET /api/v1/alerts/{alertId}': route(
    {
      operationId: 'alertsAlertsGet',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Get an alert (alerts:read)',
      params: alerts.alertParams,
      response: alerts.alert,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getAlert(appDb(), caller, params.alertId),
  ),
  'POST /api/v1/alerts/{alertId}/acknowledge': route(
    {
      operationId: 'alertsAlertsAcknowledge',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Acknowledge an open alert (alerts:manage); 409 INVALID_STATE otherwise',
      params: alerts.alertParams,
      body: alerts.alertAction,
      response: alerts.alert,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => acknowledgeAlert(appDb(), caller, params.alertId, audit),
  ),
  'POST /api/v1/alerts/{alertId}/resolve': route(
    {
      operationId: 'alertsAlertsResolve',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Resolve an open or acknowledged alert (alerts:manage); its ticket is closed',
      params: alerts.alertParams,
      body: alerts.alertAction,
      response: alerts.alert,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => resolveAlert(appDb(), caller, params.alertId, audit),
  ),
  'GET /api/v1/alerts/{alertId}/deliveries': route(
    {
      operationId: 'alertsAlertsDeliveries',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: "The alert's PSA deliveries with each attempt (alerts:read)",
      params: alerts.alertParams,
      query: alerts.listIntegrationsQuery,
      response: alerts.deliveryPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listDeliveries(appDb(), caller, params.alertId, query),
  ),
  'GET /api/v1/tickets': route(
    {
      operationId: 'alertsTicketsList',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: "The platform's own tickets, newest first (alerts:read)",
      query: alerts.listTicketsQuery,
      response: alerts.ticketPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listTickets(appDb(), caller, query),
  ),
  'GET /api/v1/tickets/{ticketId}': route(
    {
      operationId: 'alertsTicketsGet',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Get a ticket with its linked alerts (alerts:read)',
      params: alerts.ticketParams,
      response: alerts.ticket,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getTicket(appDb(), caller, params.ticketId),
  ),
  'POST /api/v1/integrations/psa': route(
    {
      operationId: 'alertsIntegrationsCreate',
      // Seals the integration's secret.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: "Create the partner's PSA integration (integrations:manage, partner users)",
      body: alerts.createIntegration,
      status: 201,
      response: alerts.integration,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createIntegration(appDb(), caller, body, audit),
  ),
  'GET /api/v1/integrations/psa': route(
    {
      operationId: 'alertsIntegrationsList',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: "The partner's PSA integrations (integrations:manage)",
      query: alerts.listIntegrationsQuery,
      response: alerts.integrationPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listIntegrations(appDb(), caller, query),
  ),
  'GET /api/v1/integrations/psa/{integrationId}': route(
    {
      operationId: 'alertsIntegrationsGet',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Get a PSA integration (its secret is never returned)',
      params: alerts.integrationParams,
      response: alerts.integration,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getIntegration(appDb(), caller, params.integrationId),
  ),
  'PATCH /api/v1/integrations/psa/{integrationId}': route(
    {
      operationId: 'alertsIntegrationsUpdate',
      // Seals the integration's secret.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Change a PSA integration',
      params: alerts.integrationParams,
      body: alerts.updateIntegration,
      response: alerts.integration,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateIntegration(appDb(), caller, params.integrationId, body, audit),
  ),
  'DELETE /api/v1/integrations/psa/{integrationId}': route(
    {
      operationId: 'alertsIntegrationsDelete',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Delete a PSA integration (soft; bindings naming it fall back to tickets)',
      params: alerts.integrationParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteIntegration(appDb(), caller, params.integrationId, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/alert-binding': route(
    {
      operationId: 'alertsBindingOrgGet',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary:
        "Where the organization's alerts go: its binding, else the partner's default, else tickets (alerts:read)",
      params: h.idParams,
      response: alerts.alertBinding,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getOrgBinding(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/alert-binding': route(
    {
      operationId: 'alertsBindingOrgPut',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: "Bind the organization's alerts to tickets or a PSA integration (integrations:manage)",
      params: h.idParams,
      body: alerts.putAlertBinding,
      response: alerts.alertBinding,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putOrgBinding(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/partners/{partnerId}/alert-binding': route(
    {
      operationId: 'alertsBindingPartnerGet',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'The partner-wide default alert binding',
      params: alerts.partnerParams,
      response: alerts.alertBinding,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getPartnerBinding(appDb(), caller, params.partnerId),
  ),
  'PUT /api/v1/partners/{partnerId}/alert-binding': route(
    {
      operationId: 'alertsBindingPartnerPut',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Set the partner-wide default alert binding (integrations:manage, partner users)',
      params: alerts.partnerParams,
      body: alerts.putAlertBinding,
      response: alerts.alertBinding,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => putPartnerBinding(appDb(), caller, params.partnerId, body, audit),
  ),
  'POST /api/v1/alerts/acknowledge': route(
    {
      operationId: 'alertsAlertsAcknowledgeMany',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Acknowledge up to 500 alerts (alerts:manage): an outcome per id',
      body: alerts.bulkAlertAction,
      response: alerts.bulkAlertReply,
      errors: [400, 401, 403],
    },
    ({ caller, body, audit }) => changeAlerts(appDb(), caller, body.alertIds, 'acknowledged', audit),
  ),
  'POST /api/v1/alerts/resolve': route(
    {
      operationId: 'alertsAlertsResolveMany',
      auth: 'userOrApiKey',
      tag: 'alerts',
      summary: 'Resolve up to 500 alerts (alerts:manage): an outcome per id',
      body: alerts.bulkAlertAction,
      response: alerts.bulkAlertReply,
      errors: [400, 401, 403],
    },
    ({ caller, body, audit }) => changeAlerts(appDb(), caller, body.alertIds, 'resolved', audit),
  ),
} as const;
