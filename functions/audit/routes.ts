import { listAuditAnchors } from '#shared/audit/anchor-list.ts';
import * as anchors from '#shared/audit/anchor-schemas.ts';
import { exportAuditLogs } from '#shared/audit/export.ts';
import { commitAuditHistoryImport, previewAuditHistoryImport } from '#shared/audit/history-import.ts';
import * as history from '#shared/audit/history-import-schemas.ts';
import { ingestAuditEvents } from '#shared/audit/ingest.ts';
import { getAuditEntry, listDetailedEntries, listViewerEntries, verifyAuditChain } from '#shared/audit/query.ts';
import { auditSummary, complianceReport, securityEvents } from '#shared/audit/reports.ts';
import { getRetentionPolicy, updateRetentionPolicy } from '#shared/audit/retention-policy.ts';
import * as retention from '#shared/audit/retention-schemas.ts';
import * as audit from '#shared/audit/schemas.ts';
import { ingestEvents, ingestReceipt } from '#shared/audit/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import * as h from '#shared/hierarchy/schemas.ts';
import { fileDownload } from '#shared/http/download.ts';
import { route } from '#shared/http/route.ts';

/** The routes of audit, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/audit-logs/events': route(
    {
      operationId: 'auditEventsIngest',
      auth: 'userOrApiKey',
      tag: 'audit',
      summary:
        'Report audit events that other platform components own (audit:write: org_service keys, platform callers); honours an Idempotency-Key header (1-255 printable characters) for 24 hours; 409 IDEMPOTENCY_KEY_REUSED for the same key with another body',
      body: ingestEvents,
      maxBodyBytes: 4 * 1024 * 1024,
      status: 201,
      response: ingestReceipt,
      errors: [400, 401, 403, 404, 409, 413],
    },
    ({ caller, body, headers }) => ingestAuditEvents(appDb(), caller, body, headers['idempotency-key']),
  ),
  // Importing another system's audit history (docs/audit.md "Importing history"): audit:manage, audited as
  // audit.history.import.
  'POST /api/v1/audit-logs/import/preview': route(
    {
      operationId: 'auditHistoryImportPreview',
      auth: 'userOrApiKey',
      tag: 'audit',
      summary:
        "Annotate up to 5,000 rows of another system's audit history (JSON rows or CSV) against the organization's imported rows; stores nothing (audit:manage)",
      body: history.historyImport,
      maxBodyBytes: 5 * 1024 * 1024,
      response: history.historyImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body }) => previewAuditHistoryImport(appDb(), caller, body),
  ),
  'POST /api/v1/audit-logs/import': route(
    {
      operationId: 'auditHistoryImportCommit',
      auth: 'userOrApiKey',
      tag: 'audit',
      summary:
        "Import up to 5,000 rows of another system's audit history into the organization's trail, once per (sourceSystem, externalId); marked details.imported (audit:manage)",
      body: history.historyImport,
      maxBodyBytes: 5 * 1024 * 1024,
      response: history.historyImportReply,
      errors: [400, 401, 403, 404, 409, 413],
    },
    ({ caller, body, audit }) => commitAuditHistoryImport(appDb(), caller, audit, body),
  ),
  // Reading the trail: JWT users with audit:read; partner users see all their organizations (soft-deleted too), newest first.
  'GET /api/v1/audit-logs': route(
    {
      operationId: 'auditViewerList',
      auth: 'user',
      tag: 'audit',
      summary: "Audit log in the viewer's flattened format",
      query: audit.auditListQuery,
      response: audit.auditViewerPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listViewerEntries(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/logs': route(
    {
      operationId: 'auditLogsList',
      auth: 'user',
      tag: 'audit',
      summary: 'Audit log in the detailed format',
      query: audit.auditListQuery,
      response: audit.auditDetailedPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listDetailedEntries(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/logs/{id}': route(
    {
      operationId: 'auditLogsGet',
      auth: 'user',
      tag: 'audit',
      summary:
        "One audit entry (detailed format); 404 when absent or another tenant's; the read is audited as data.access",
      params: audit.auditIdParams,
      response: audit.auditDetailedEntry,
      errors: [400, 401, 403, 404],
    },
    ({ caller, audit, params }) => getAuditEntry(appDb(), caller, audit, params.id),
  ),
  'GET /api/v1/audit-logs/search': route(
    {
      operationId: 'auditLogsSearch',
      auth: 'user',
      tag: 'audit',
      summary:
        'Search (ILIKE) over action, actor e-mail, resource type, resource name and details, ANDed with the filters; detailed format',
      query: audit.auditSearchQuery,
      response: audit.auditDetailedPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listDetailedEntries(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/export': route(
    {
      operationId: 'auditLogsExport',
      auth: 'user',
      tag: 'audit',
      summary:
        'Export the newest 10,000 rows at most under the filters as an attachment: JSON (verifiable offline) or CSV (text/csv); gzip when the file exceeds 5.5 MiB and the client accepts it, else 413; audited as data.export',
      query: audit.auditExportQuery,
      response: audit.auditExport,
      download: { textTypes: ['text/csv'] },
      errors: [400, 401, 403, 413],
    },
    ({ caller, audit, query, headers }) =>
      exportAuditLogs(appDb(), caller, audit, query, fileDownload(headers['accept-encoding'])),
  ),
  'GET /api/v1/audit-logs/reports/summary': route(
    {
      operationId: 'auditReportsSummary',
      auth: 'user',
      tag: 'audit',
      summary: 'Row counts by category, result and actor type over from/to and the filters',
      query: audit.auditReportQuery,
      response: audit.auditSummary,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => auditSummary(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/reports/security-events': route(
    {
      operationId: 'auditReportsSecurityEvents',
      auth: 'user',
      tag: 'audit',
      summary: 'Rows of the security events (the security category), detailed format',
      query: audit.auditListQuery,
      response: audit.auditDetailedPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => securityEvents(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/reports/compliance': route(
    {
      operationId: 'auditReportsCompliance',
      auth: 'user',
      tag: 'audit',
      summary: 'Rows of the compliance-tracked actions, detailed format, with counts per action',
      query: audit.auditListQuery,
      response: audit.auditCompliancePage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => complianceReport(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/verify': route(
    {
      operationId: 'auditChainVerify',
      auth: 'user',
      tag: 'audit',
      summary: "Verify an organization's hash chain, optionally within from/to; partner and platform users name orgId",
      query: audit.auditVerifyQuery,
      response: audit.auditVerification,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => verifyAuditChain(appDb(), caller, query),
  ),
  'GET /api/v1/audit-logs/anchors': route(
    {
      operationId: 'auditAnchorsList',
      grants: ['anchor-public-key'],
      auth: 'user',
      tag: 'audit',
      summary:
        "The signed anchors of the integrity watch (audit:read) for the caller's organizations, newest first, with the Ed25519 public key to verify them: keep copies, verify the chain against them later (orgId narrows)",
      query: anchors.anchorListQuery,
      response: anchors.auditAnchorPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listAuditAnchors(appDb(), caller, query),
  ),
  // Audit retention: the organization's policy; JWT users only, like the trail it governs.
  'GET /api/v1/orgs/organizations/{id}/audit-retention': route(
    {
      operationId: 'auditRetentionGet',
      auth: 'user',
      tag: 'audit',
      summary:
        "The organization's audit retention policy (audit:read); configured false with the defaults (365 days) when it has none",
      params: h.idParams,
      response: retention.retentionPolicy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getRetentionPolicy(appDb(), caller, params.id),
  ),
  'PUT /api/v1/orgs/organizations/{id}/audit-retention': route(
    {
      operationId: 'auditRetentionUpdate',
      auth: 'user',
      tag: 'audit',
      summary:
        "Save the organization's audit retention, 1 to 3650 days (audit:manage); the daily worker deletes the oldest rows beyond it; audited as organization.update",
      params: h.idParams,
      body: retention.updateRetentionPolicy,
      response: retention.retentionPolicy,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateRetentionPolicy(appDb(), caller, params.id, body, audit),
  ),
} as const;
