import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { auditCategories, complianceActions } from './categories.ts';
import { type AuditListQuery, listDetailedEntries, readableScope } from './query.ts';
import { type AuditFilters, countAuditRowsByAction, countAuditRowsByKind } from './read-store.ts';
import { actorTypes, auditResults } from './schemas.ts';

const zeros = <K extends string>(keys: readonly K[]) =>
  Object.fromEntries(keys.map((key) => [key, 0])) as Record<K, number>;

/** GET /audit-logs/reports/summary: rows per category, result and actor type; every key listed. */
export async function auditSummary(db: Db, principal: Principal, filters: AuditFilters) {
  const groups = await countAuditRowsByKind(db, readableScope(principal, filters));
  const summary = {
    total: 0,
    byCategory: zeros(auditCategories),
    byResult: zeros(auditResults),
    byActorType: zeros(actorTypes),
  };
  for (const group of groups) {
    summary.total += group.total;
    summary.byCategory[group.category] += group.total;
    summary.byResult[group.result] += group.total;
    summary.byActorType[group.actorType] += group.total;
  }
  return summary;
}

/** GET /audit-logs/reports/security-events: the rows of the security-event actions, as the detailed list. */
export function securityEvents(db: Db, principal: Principal, query: AuditListQuery) {
  return listDetailedEntries(db, principal, { ...query, only: 'securityEvents' });
}

/** GET /audit-logs/reports/compliance: the rows of the compliance-tracked actions, with their count per action. */
export async function complianceReport(db: Db, principal: Principal, query: AuditListQuery) {
  const filters = { ...query, only: 'compliance' as const };
  const scope = readableScope(principal, filters);
  const [page, counted] = await Promise.all([
    listDetailedEntries(db, principal, filters),
    countAuditRowsByAction(db, scope),
  ]);
  const counts: Record<string, number> = zeros(complianceActions);
  for (const { action, total } of counted) counts[action] = total;
  return { ...page, counts };
}
