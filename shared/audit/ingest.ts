import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, requirePermission, tenantParams } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { parseIdempotencyKey } from '../db/idempotency.ts';
import { DomainError } from '../errors.ts';
import type { ingestEvents, ingestReceipt } from './schemas.ts';
import { type AppendedRow, type AuditRowInput, insertAuditRows } from './store.ts';
import { toAuditRow } from './writer.ts';

type IngestRequest = z.output<typeof ingestEvents>;
type IngestReceipt = z.output<typeof ingestReceipt>;

/**
 * Appends audit events that other platform components report: a service key (org_service)
 * for its own organization, a platform caller for any existing one. Only the actions those components
 * own, and timestamps at most 10 minutes ahead (schemas.ts ingestedEvent). Each row records who reported
 * it in details.reportedBy and when the server received it in details.reportedAt; the event's own actor
 * fields describe the original actor. All rows go in one statement; with an Idempotency-Key, in one transaction that
 * claims the key (shared/http/idempotency.ts), so a retry within 24 hours gets the first reply.
 */
export async function ingestAuditEvents(
  db: Db,
  principal: Principal,
  body: IngestRequest,
  keyHeader: string | undefined,
): Promise<IngestReceipt> {
  const key = parseIdempotencyKey(keyHeader);
  requirePermission(principal, 'audit:write');
  const reportedBy = { actorType: principal.actorType, id: principal.id };
  // When the server received the report, beside the event's own timestamp (which the reporter chose).
  const reportedAt = new Date().toISOString();
  const rows = body.events.map((event) =>
    toAuditRow({ ...event, details: { ...event.details, reportedBy, reportedAt } }),
  );
  await assertOrganizations(db, principal, rows);
  const append = async (tx: Db): Promise<IngestReceipt> => ({
    received: rows.length,
    ids: inRequestOrder(rows, await insertAuditRows(tx, rows)),
  });
  if (key === undefined) return append(db);
  // READ COMMITTED (the sealing trigger refuses REPEATABLE READ).
  return db.transaction((tx) => append(tx));
}

/**
 * Every event's organization exists and is the caller's to report for, else 404 naming the events
 * (an organization of another tenant is absent). A soft-deleted organization still takes late
 * events: its trail stays readable, and its keys no longer authenticate, so only platform callers reach it.
 */
async function assertOrganizations(db: Db, principal: Principal, rows: AuditRowInput[]): Promise<void> {
  const { rows: found } = await db.query<{ id: string }>(
    `SELECT o.id::text AS id FROM organizations o
      WHERE o.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:orgIds::jsonb)) AND ${orgTenantSql('o')}`,
    { orgIds: [...new Set(rows.map((row) => row.orgId))], ...tenantParams(principal) },
  );
  const reachable = new Set(found.map((org) => org.id));
  const missing = rows.flatMap((row, index) =>
    reachable.has(row.orgId)
      ? []
      : [{ path: `body.events.${index}.orgId`, message: 'Organization not found', code: 'not_found' }],
  );
  if (missing.length > 0)
    throw new DomainError(
      'NOT_FOUND',
      `Organization of ${missing[0]!.path.replace(/\.orgId$/, '')} not found`,
      missing,
    );
}

/**
 * The ids in request order. insertAuditRows sorts rows stably by organization and inserts (and the chain seals)
 * them in that order, so within an organization ascending pos is request order.
 */
function inRequestOrder(rows: AuditRowInput[], sealed: AppendedRow[]): string[] {
  const idsByOrg = new Map<string, string[]>();
  for (const row of [...sealed].sort((a, b) => a.pos - b.pos))
    idsByOrg.set(row.orgId, [...(idsByOrg.get(row.orgId) ?? []), row.id]);
  return rows.map((row) => idsByOrg.get(row.orgId)!.shift()!);
}
