import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { pagination } from '../db/paging.ts';
import { NotFound, ValidationFailed } from '../errors.ts';
import { configuredAnchorPublicKey } from './anchor-signing.ts';
import { chainBreakMeaning } from './chain-break.ts';
import {
  type AuditEntryRow,
  type AuditFilters,
  type AuditScope,
  auditScope,
  countAuditRows,
  selectAuditRow,
  selectAuditRows,
  selectScopedOrganization,
} from './read-store.ts';
import { verifyChain } from './verify.ts';
import { type AuditContext, writeRouteAudit } from './writer.ts';

/** What the principal may read of the trail under these filters: audit:read, then its tenancy. */
export function readableScope(principal: Principal, filters: AuditFilters): AuditScope {
  requirePermission(principal, 'audit:read');
  return auditScope(principal, filters);
}

export type AuditListQuery = Page & AuditFilters & { skipCount: boolean };

/**
 * One page, newest first, and what is known of the total. One row more than the page is read, so
 * `hasMore` always says whether a next page exists. Without skipCount the rows in scope are counted exactly (issue
 * 13 item 7): whole trails from their chains, a filtered set row by row. With skipCount nothing is counted:
 * `total` is then what the rows prove (a page with rows gives the rows up to it, plus one when more exist), and
 * `totalExact` says whether it is the number of rows in scope or only a lower bound (skipCount before the last page).
 */
export async function listAuditEntries(db: Db, principal: Principal, query: AuditListQuery) {
  const scope = readableScope(principal, query);
  const offset = (query.page - 1) * query.limit;
  const [read, counted] = await Promise.all([
    selectAuditRows(db, scope, { offset, limit: query.limit + 1 }),
    query.skipCount ? undefined : countAuditRows(db, scope),
  ]);
  const rows = read.slice(0, query.limit);
  const hasMore = read.length > query.limit;
  const proven = rows.length === 0 ? 0 : offset + rows.length + (hasMore ? 1 : 0);
  // The last page, or an empty first page, ends the set where the rows end.
  const endSeen = (rows.length > 0 || offset === 0) && !hasMore;
  const countExact = counted !== undefined;
  const total = countExact ? counted : Math.max(counted ?? 0, proven);
  return {
    rows,
    pagination: { ...pagination(query.page, query.limit, total), hasMore, totalExact: countExact || endSeen },
  };
}

/** GET /audit-logs: the viewer's flattened format. */
export async function listViewerEntries(db: Db, principal: Principal, query: AuditListQuery) {
  const { rows, pagination } = await listAuditEntries(db, principal, query);
  return { entries: rows.map(viewerEntry), pagination };
}

/** GET /audit-logs/logs and /audit-logs/search (with q): the detailed format. */
export async function listDetailedEntries(db: Db, principal: Principal, query: AuditListQuery) {
  const { rows, pagination } = await listAuditEntries(db, principal, query);
  return { data: rows.map(detailedEntry), pagination };
}

/** One entry (404 when absent or out of scope); reading it is itself audited as data.access. */
export async function getAuditEntry(db: Db, principal: Principal, audit: AuditContext, id: string) {
  const row = await selectAuditRow(db, readableScope(principal, {}), id);
  if (!row) throw NotFound('Audit log entry');
  writeRouteAudit(audit, { orgId: row.orgId, action: 'data.access', resourceType: 'audit_log', resourceId: row.id });
  return detailedEntry(row);
}

/**
 * Verifies one organization's chain: organization users their own; partner and platform users
 * name it. Another tenant's organization is 404. The reply carries the chain head read in the same snapshot,
 * to be kept or compared outside the database (docs/audit.md "Verifying the chain").
 */
export async function verifyAuditChain(
  db: Db,
  principal: Principal,
  query: { orgId?: string; from?: string; to?: string },
) {
  requirePermission(principal, 'audit:read');
  const orgId = query.orgId ?? (principal.scope === 'organization' ? principal.orgId : null);
  if (!orgId)
    throw ValidationFailed('orgId is required', [
      { path: 'query.orgId', message: 'Partner and platform users name the organization', code: 'invalid_type' },
    ]);
  if (!(await selectScopedOrganization(db, auditScope(principal, { orgId })))) throw NotFound('Organization');
  // Against the signed evidence too: the checkpoint it starts after, the newest anchor, deleted anchors.
  const verification = await verifyChain(db, orgId, {
    from: query.from,
    to: query.to,
    reportHead: true,
    evidence: { publicKey: configuredAnchorPublicKey() },
  });
  const { firstBreak, ...rest } = verification;
  const head = verification.head ?? null;
  return firstBreak
    ? { ...rest, head, firstBreak: { ...firstBreak, meaning: chainBreakMeaning[firstBreak.kind] } }
    : { ...rest, head };
}

type Json = Record<string, unknown>;
const text = (value: unknown) => (typeof value === 'string' ? value : '');
const object = (value: unknown) =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
/** A row's details (jsonb text, always an object). */
const detailsOf = (row: AuditEntryRow): Json => JSON.parse(row.details);
/** writeRouteAudit records the actor's name and role (and a department where known) in details.actor. */
const actorOf = (details: Json) => object(details.actor) ?? {};

/** The viewer's flattened entry. */
export function viewerEntry(row: AuditEntryRow) {
  const details = detailsOf(row);
  const actor = actorOf(details);
  const changes = object(details.changes);
  return {
    id: row.id,
    timestamp: row.timestamp,
    action: row.action,
    resource: row.resourceName ?? '',
    resourceType: row.resourceType ?? '',
    details: JSON.stringify(details),
    ipAddress: row.ipAddress ?? '',
    userAgent: row.userAgent ?? '',
    sessionId: typeof details.sessionId === 'string' ? details.sessionId : null,
    user: {
      name: text(actor.name),
      email: row.actorEmail ?? '',
      role: text(actor.role),
      department: text(actor.department),
    },
    changes: {
      before: object(details.before) ?? object(changes?.before) ?? {},
      after: object(details.after) ?? object(changes?.after) ?? {},
    },
    ...additions(row),
  };
}

/** The detailed entry. */
export function detailedEntry(row: AuditEntryRow) {
  const details = detailsOf(row);
  const actor = actorOf(details);
  return {
    id: row.id,
    timestamp: row.timestamp,
    user: { id: row.actorId, name: text(actor.name), email: row.actorEmail ?? '', role: text(actor.role) },
    action: row.action,
    resource: { type: row.resourceType ?? '', id: row.resourceId, name: row.resourceName ?? '' },
    ipAddress: row.ipAddress,
    userAgent: row.userAgent,
    details,
    errorMessage: row.errorMessage,
    ...additions(row),
  };
}

/** What both formats add for the viewer. */
function additions(row: AuditEntryRow) {
  return {
    orgId: row.orgId,
    seq: row.seq,
    actorType: row.actorType,
    actorHostname: row.actorHostname,
    category: row.category,
    result: row.result,
  };
}
