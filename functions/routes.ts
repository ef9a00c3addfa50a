/**
 * The one route table. The local API Gateway (infra/local) and the CDK stack both
 * read it; the OpenAPI document is generated from its schemas. Paths use API
 * Gateway's `{name}` parameters.
 */
import { z } from 'zod';
import * as agentLogs from '#shared/agent-logs/schemas.ts';
import * as agents from '#shared/agents/schemas.ts';
import * as anchors from '#shared/audit/anchor-schemas.ts';
import * as retention from '#shared/audit/retention-schemas.ts';
import * as audit from '#shared/audit/schemas.ts';
import { ingestEvents, ingestReceipt } from '#shared/audit/schemas.ts';
import * as keys from '#shared/auth/schemas.ts';
import * as eventLogs from '#shared/event-logs/schemas.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { type RouteDef, route } from '#shared/http/route.ts';
import * as live from '#shared/live-query/schemas.ts';

const health = z.object({ status: z.literal('ok') });
const liveErrors = [400, 401, 403, 404, 409, 502, 504] as const;

export const routes = {
  'GET /api/v1/health': route({
    handler: 'system/health',
    auth: 'none',
    tag: 'system',
    summary: 'Readiness: 200 once the database answers',
    response: health,
    errors: [503],
  }),
  'GET /api/v1/openapi.json': route({
    handler: 'system/openapi',
    auth: 'none',
    tag: 'system',
    summary: 'This OpenAPI 3.1 document',
  }),

  'POST /api/v1/partners': route({
    handler: 'hierarchy/partners-create',
    auth: 'user',
    tag: 'hierarchy',
    summary: 'Create a partner (platform_admin)',
    body: h.createPartner,
    status: 201,
    response: h.partner,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/partners': route({
    handler: 'hierarchy/partners-list',
    auth: 'user',
    tag: 'hierarchy',
    summary: 'List partners (platform_admin)',
    query: h.listPartnersQuery,
    response: h.partnerPage,
    errors: [400, 401, 403],
  }),

  'POST /api/v1/orgs/organizations': route({
    handler: 'hierarchy/organizations-create',
    auth: 'user',
    tag: 'hierarchy',
    summary: 'Create an organization and its first site',
    body: h.createOrganization,
    status: 201,
    response: h.createdOrganization,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/orgs/organizations': route({
    handler: 'hierarchy/organizations-list',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'List the organizations the caller may reach',
    query: h.listOrganizationsQuery,
    response: h.organizationPage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/orgs/organizations/{id}': route({
    handler: 'hierarchy/organizations-get',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Get an organization',
    params: h.idParams,
    response: h.organization,
    errors: [400, 401, 403, 404],
  }),
  'PATCH /api/v1/orgs/organizations/{id}': route({
    handler: 'hierarchy/organizations-update',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Change an organization',
    params: h.idParams,
    body: h.updateOrganization,
    response: h.organization,
    errors: [400, 401, 403, 404],
  }),
  'DELETE /api/v1/orgs/organizations/{id}': route({
    handler: 'hierarchy/organizations-delete',
    auth: 'user',
    tag: 'hierarchy',
    summary: 'Delete an organization (soft: its audit trail stays readable to the partner)',
    params: h.idParams,
    status: 204,
    errors: [400, 401, 403, 404],
  }),

  'GET /api/v1/orgs/organizations/{id}/sites': route({
    handler: 'hierarchy/sites-list',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'List the sites of an organization',
    params: h.idParams,
    query: h.pageOnlyQuery,
    response: h.sitePage,
    errors: [400, 401, 403, 404],
  }),
  'POST /api/v1/orgs/organizations/{id}/sites': route({
    handler: 'hierarchy/sites-create',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Create a site',
    params: h.idParams,
    body: h.createSite,
    status: 201,
    response: h.site,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/orgs/organizations/{id}/sites/{siteId}': route({
    handler: 'hierarchy/sites-get',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Get a site',
    params: h.siteParams,
    response: h.site,
    errors: [400, 401, 403, 404],
  }),
  'PATCH /api/v1/orgs/organizations/{id}/sites/{siteId}': route({
    handler: 'hierarchy/sites-update',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Change a site',
    params: h.siteParams,
    body: h.updateSite,
    response: h.site,
    errors: [400, 401, 403, 404],
  }),
  'DELETE /api/v1/orgs/organizations/{id}/sites/{siteId}': route({
    handler: 'hierarchy/sites-delete',
    auth: 'principal',
    tag: 'hierarchy',
    summary: 'Delete a site; 409 LAST_SITE for the last one, 409 SITE_NOT_EMPTY while devices remain',
    params: h.siteParams,
    status: 204,
    errors: [400, 401, 403, 404, 409],
  }),

  'POST /api/v1/orgs/organizations/{id}/enrollment-keys': route({
    handler: 'hierarchy/enrollment-keys-create',
    auth: 'principal',
    tag: 'enrollment',
    summary: 'Create an enrollment key for the organization or one of its sites',
    params: h.idParams,
    body: h.createEnrollmentKey,
    status: 201,
    response: h.createdEnrollmentKey,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/orgs/organizations/{id}/enrollment-keys': route({
    handler: 'hierarchy/enrollment-keys-list',
    auth: 'principal',
    tag: 'enrollment',
    summary: 'List enrollment keys (without the keys themselves)',
    params: h.idParams,
    query: h.pageOnlyQuery,
    response: h.enrollmentKeyPage,
    errors: [400, 401, 403, 404],
  }),
  'DELETE /api/v1/orgs/organizations/{id}/enrollment-keys/{keyId}': route({
    handler: 'hierarchy/enrollment-keys-revoke',
    auth: 'principal',
    tag: 'enrollment',
    summary: 'Revoke an enrollment key',
    params: h.keyParams,
    status: 204,
    errors: [400, 401, 403, 404],
  }),
  'POST /api/v1/agents/enroll': route({
    handler: 'hierarchy/agents-enroll',
    auth: 'none',
    tag: 'enrollment',
    summary: 'Enroll an agent with an enrollment key (and the enrollment secret when one is configured)',
    body: h.enroll,
    status: 201,
    response: h.enrolled,
    errors: [400, 401],
  }),

  'POST /api/v1/orgs/organizations/{id}/api-keys': route({
    handler: 'auth/api-keys-create',
    auth: 'user',
    tag: 'api-keys',
    summary: 'Create an organization API key (lbk_…)',
    params: h.idParams,
    body: keys.createApiKey,
    status: 201,
    response: keys.createdApiKey,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/orgs/organizations/{id}/api-keys': route({
    handler: 'auth/api-keys-list',
    auth: 'user',
    tag: 'api-keys',
    summary: 'List API keys (without the keys themselves)',
    params: h.idParams,
    query: h.pageOnlyQuery,
    response: keys.apiKeyPage,
    errors: [400, 401, 403, 404],
  }),
  'DELETE /api/v1/orgs/organizations/{id}/api-keys/{keyId}': route({
    handler: 'auth/api-keys-revoke',
    auth: 'user',
    tag: 'api-keys',
    summary: 'Revoke an API key',
    params: h.keyParams,
    status: 204,
    errors: [400, 401, 403, 404],
  }),

  'GET /api/v1/devices': route({
    handler: 'hierarchy/devices-list',
    auth: 'principal',
    tag: 'devices',
    summary: 'List devices the caller may reach',
    query: h.listDevicesQuery,
    response: h.devicePage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/devices/{id}': route({
    handler: 'hierarchy/devices-get',
    auth: 'principal',
    tag: 'devices',
    summary: 'Get a device',
    params: h.idParams,
    response: h.device,
    errors: [400, 401, 403, 404],
  }),
  'PATCH /api/v1/devices/{id}': route({
    handler: 'hierarchy/devices-update',
    auth: 'principal',
    tag: 'devices',
    summary: 'Rename a device or move it to another site of its organization',
    params: h.idParams,
    body: h.updateDevice,
    response: h.device,
    errors: [400, 401, 403, 404],
  }),
  'DELETE /api/v1/devices/{id}': route({
    handler: 'hierarchy/devices-delete',
    auth: 'principal',
    tag: 'devices',
    summary: 'Delete a device (soft) and revoke its agent token',
    params: h.idParams,
    status: 204,
    errors: [400, 401, 403, 404],
  }),

  'POST /api/v1/audit-logs/events': route({
    handler: 'audit/events-ingest',
    auth: 'principal',
    tag: 'audit',
    summary:
      'Report audit events that other platform components own (audit:write: org_service keys, platform callers); honours an Idempotency-Key header (1-255 printable characters) for 24 hours; 409 IDEMPOTENCY_KEY_REUSED for the same key with another body',
    body: ingestEvents,
    status: 201,
    response: ingestReceipt,
    errors: [400, 401, 403, 404, 409],
  }),

  // Reading the trail (seed 4.1): JWT users with audit:read; partner users see all their organizations (soft-deleted too), newest first.
  'GET /api/v1/audit-logs': route({
    handler: 'audit/viewer-list',
    auth: 'user',
    tag: 'audit',
    summary: "Audit log in the viewer's flattened format (seed 4.1.1)",
    query: audit.auditListQuery,
    response: audit.auditViewerPage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/logs': route({
    handler: 'audit/logs-list',
    auth: 'user',
    tag: 'audit',
    summary: 'Audit log in the detailed format (seed 4.1.2)',
    query: audit.auditListQuery,
    response: audit.auditDetailedPage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/logs/{id}': route({
    handler: 'audit/logs-get',
    auth: 'user',
    tag: 'audit',
    summary:
      "One audit entry (detailed format); 404 when absent or another tenant's; the read is audited as data.access",
    params: audit.auditIdParams,
    response: audit.auditDetailedEntry,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/audit-logs/search': route({
    handler: 'audit/logs-search',
    auth: 'user',
    tag: 'audit',
    summary:
      'Search (ILIKE) over action, actor e-mail, resource type, resource name and details, ANDed with the filters; detailed format',
    query: audit.auditSearchQuery,
    response: audit.auditDetailedPage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/export': route({
    handler: 'audit/logs-export',
    auth: 'user',
    tag: 'audit',
    summary:
      'Export the newest 10,000 rows at most under the filters as an attachment: JSON (verifiable offline) or CSV (text/csv); gzip when the file exceeds 5.5 MiB and the client accepts it, else 413; audited as data.export',
    query: audit.auditExportQuery,
    response: audit.auditExport,
    errors: [400, 401, 403, 413],
  }),
  'GET /api/v1/audit-logs/reports/summary': route({
    handler: 'audit/reports-summary',
    auth: 'user',
    tag: 'audit',
    summary: 'Row counts by category (seed 2.3), result and actor type over from/to and the filters',
    query: audit.auditReportQuery,
    response: audit.auditSummary,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/reports/security-events': route({
    handler: 'audit/reports-security-events',
    auth: 'user',
    tag: 'audit',
    summary: 'Rows of the security events of seed 2.3, detailed format',
    query: audit.auditListQuery,
    response: audit.auditDetailedPage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/reports/compliance': route({
    handler: 'audit/reports-compliance',
    auth: 'user',
    tag: 'audit',
    summary: 'Rows of the compliance-tracked actions of seed 2.3, detailed format, with counts per action',
    query: audit.auditListQuery,
    response: audit.auditCompliancePage,
    errors: [400, 401, 403],
  }),
  'GET /api/v1/audit-logs/verify': route({
    handler: 'audit/chain-verify',
    auth: 'user',
    tag: 'audit',
    summary: "Verify an organization's hash chain, optionally within from/to; partner and platform users name orgId",
    query: audit.auditVerifyQuery,
    response: audit.auditVerification,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/audit-logs/anchors': route({
    handler: 'audit/anchors-list',
    auth: 'user',
    tag: 'audit',
    summary:
      "The signed anchors of the integrity watch (audit:read) for the caller's organizations, newest first, with the Ed25519 public key to verify them: keep copies, verify the chain against them later (orgId narrows)",
    query: anchors.anchorListQuery,
    response: anchors.auditAnchorPage,
    errors: [400, 401, 403],
  }),

  // Audit retention (seed 4.2): the organization's policy; JWT users only, like the trail it governs.
  'GET /api/v1/orgs/organizations/{id}/audit-retention': route({
    handler: 'audit/retention-get',
    auth: 'user',
    tag: 'audit',
    summary:
      "The organization's audit retention policy (audit:read); configured false with the defaults (365 days) when it has none",
    params: h.idParams,
    response: retention.retentionPolicy,
    errors: [400, 401, 403, 404],
  }),
  'PUT /api/v1/orgs/organizations/{id}/audit-retention': route({
    handler: 'audit/retention-update',
    auth: 'user',
    tag: 'audit',
    summary:
      "Save the organization's audit retention, 1 to 3650 days (audit:manage); the daily worker deletes the oldest rows beyond it; audited as organization.update",
    params: h.idParams,
    body: retention.updateRetentionPolicy,
    response: retention.retentionPolicy,
    errors: [400, 401, 403, 404],
  }),

  // Agents (seed 4.3, 4.4, 5): the bearer token from enrollment (401 when missing or revoked); the path names the
  // calling agent itself (another agent's id 403, an id no device matches 404). Bodies above maxBodyBytes: 413 unparsed.
  'POST /api/v1/agents/{id}/heartbeat': route({
    handler: 'agents/heartbeat',
    auth: 'agent',
    tag: 'agents',
    summary:
      'Heartbeat: records last seen, source IP, agent version and status; audits agent.source.ip.changed when the source IP changed',
    params: agents.agentParams,
    body: agents.heartbeat,
    maxBodyBytes: 64 * 1024,
    response: agents.heartbeatReply,
    errors: [400, 401, 403, 404, 413],
  }),
  'POST /api/v1/agents/{id}/logs': route({
    handler: 'agent-logs/ingest',
    auth: 'agent',
    tag: 'agent-logs',
    summary:
      "Submit up to 500 diagnostic log entries (2 MiB), stored 100 per insert; 429 RATE_LIMITED with Retry-After beyond the device's hourly budget; " +
      'honours an Idempotency-Key header (1-255 printable characters) for 24 hours: a resend gets the first reply and stores nothing, the same key with another body is 409 IDEMPOTENCY_KEY_REUSED',
    params: agents.agentParams,
    body: agentLogs.submitLogs,
    maxBodyBytes: 2 * 1024 * 1024,
    status: 201,
    response: agentLogs.logsReceipt,
    errors: [400, 401, 403, 404, 409, 413, 429],
  }),
  'PUT /api/v1/agents/{id}/eventlogs': route({
    handler: 'event-logs/ingest',
    auth: 'agent',
    tag: 'event-logs',
    summary:
      "Submit up to 1000 device events (4 MiB) in one transaction; duplicates on (device, source, eventId) are ignored and not counted; audited as agent.eventlogs.submit; 429 RATE_LIMITED with Retry-After beyond the device's hourly budget",
    params: agents.agentParams,
    body: eventLogs.submitEvents,
    maxBodyBytes: 4 * 1024 * 1024,
    response: eventLogs.eventsReceipt,
    errors: [400, 401, 403, 404, 413, 429],
  }),
  'GET /api/v1/devices/{id}/diagnostic-logs': route({
    handler: 'agent-logs/list',
    auth: 'principal',
    tag: 'agent-logs',
    summary: "A device's diagnostic log entries, newest first (logs:read)",
    params: h.idParams,
    query: agentLogs.diagnosticLogsQuery,
    response: agentLogs.diagnosticLogPage,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/devices/{id}/eventlogs': route({
    handler: 'event-logs/list',
    auth: 'principal',
    tag: 'event-logs',
    summary: "A device's stored event log entries, newest first (logs:read)",
    params: h.idParams,
    query: eventLogs.eventLogsQuery,
    response: eventLogs.deviceEventLogPage,
    errors: [400, 401, 403, 404],
  }),
  'GET /api/v1/orgs/organizations/{id}/ingest-limits': route({
    handler: 'agents/ingest-limits-get',
    auth: 'principal',
    tag: 'agents',
    summary: 'The hourly ingest budgets per device in force for the organization (orgs:read)',
    params: h.idParams,
    response: agents.ingestLimits,
    errors: [400, 401, 403, 404],
  }),
  'PUT /api/v1/orgs/organizations/{id}/ingest-limits': route({
    handler: 'agents/ingest-limits-update',
    auth: 'principal',
    tag: 'agents',
    summary:
      'Override the hourly ingest budgets per device (orgs:write, partner and platform users; null restores the default); audited as organization.update',
    params: h.idParams,
    body: agents.updateIngestLimits,
    response: agents.ingestLimits,
    errors: [400, 401, 403, 404],
  }),

  // Live event-log queries (seed 4.5): relayed to the device's agent over its WebSocket connection (wsRoutes); logs:read,
  // the device tenant-scoped as GET /devices/{id}. 409 DEVICE_OFFLINE without a connection, 504 AGENT_TIMEOUT after 28 s
  // (LIVE_QUERY_TIMEOUT_MS), 502 AGENT_BAD_RESPONSE for an unreadable answer, 404 for what the agent does not have.
  // Each exists under /system-tools/devices/{deviceId} and /devices/{id}, one handler for both, except the list of logs:
  // GET /devices/{id}/eventlogs is the stored event list (seed 4.4), so the live list is under /system-tools only.
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs': route({
    handler: 'live-query/eventlogs-list',
    auth: 'principal',
    tag: 'live-query',
    summary:
      "The device's event logs, live from its agent (logs:read). Only here: GET /devices/{id}/eventlogs is the stored event list",
    params: live.systemToolsDeviceParams,
    response: live.eventLogDescriptorPage,
    errors: liveErrors,
  }),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}': route({
    handler: 'live-query/eventlogs-get',
    auth: 'principal',
    tag: 'live-query',
    summary: 'One event log of the device, live from its agent; the name is matched case-insensitively (logs:read)',
    params: live.systemToolsLogParams,
    response: live.eventLogDescriptor,
    errors: liveErrors,
  }),
  'GET /api/v1/devices/{id}/eventlogs/{name}': route({
    handler: 'live-query/eventlogs-get',
    auth: 'principal',
    tag: 'live-query',
    summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}',
    params: live.deviceLogParams,
    response: live.eventLogDescriptor,
    errors: liveErrors,
  }),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events': route({
    handler: 'live-query/events-list',
    auth: 'principal',
    tag: 'live-query',
    summary:
      'Events of one event log of the device, live from its agent, newest first, filtered by the agent (logs:read)',
    params: live.systemToolsLogParams,
    query: live.liveEventsQuery,
    response: live.liveEventPage,
    errors: liveErrors,
  }),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events': route({
    handler: 'live-query/events-list',
    auth: 'principal',
    tag: 'live-query',
    summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}/events',
    params: live.deviceLogParams,
    query: live.liveEventsQuery,
    response: live.liveEventPage,
    errors: liveErrors,
  }),
  'GET /api/v1/system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}': route({
    handler: 'live-query/events-get',
    auth: 'principal',
    tag: 'live-query',
    summary: 'One event of the device by its record id, live from its agent (logs:read)',
    params: live.systemToolsEventParams,
    response: live.liveEvent,
    errors: liveErrors,
  }),
  'GET /api/v1/devices/{id}/eventlogs/{name}/events/{recordId}': route({
    handler: 'live-query/events-get',
    auth: 'principal',
    tag: 'live-query',
    summary: 'As GET /system-tools/devices/{deviceId}/eventlogs/{name}/events/{recordId}',
    params: live.deviceEventParams,
    response: live.liveEvent,
    errors: liveErrors,
  }),
} as const satisfies Record<string, RouteDef>;

export type RouteKey = keyof typeof routes;

/**
 * The WebSocket API (DESIGN.md "Shape"): agents connect with their token and answer live queries
 * (shared/live-query). The local WebSocket gateway (infra/local/ws-gateway.ts) and the CDK stack read it.
 */
export const wsRoutes = {
  $connect: {
    handler: 'ws/connect',
    summary:
      "Authenticate the agent (Authorization: Bearer, or ?token=) and make this its device's live connection, replacing an older one",
  },
  $disconnect: { handler: 'ws/disconnect', summary: 'Forget the connection' },
  $default: {
    handler: 'ws/default',
    summary: "An agent's answer to a live query (or a chunk of one), or a keep-alive",
  },
} as const satisfies Record<'$connect' | '$disconnect' | '$default', { handler: string; summary: string }>;
