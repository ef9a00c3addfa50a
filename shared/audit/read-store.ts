import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, type Params } from '../db/db.ts';
import { likePattern } from '../db/like-pattern.ts';
import { type AuditCategory, actionInSql, categorySql, complianceActions, securityEventActions } from './categories.ts';
import { type AuditRow, auditDetailsJoin, auditRowColumns, linkedSql, sizedAuditRowsSql } from './row.ts';
import type { ActorType, AuditResult } from './schemas.ts';

/** The filters every list, search, export and report route takes; `only` narrows to the actions of one report (shared/audit/categories.ts). */
export interface AuditFilters {
  orgId?: string;
  user?: string;
  action?: string;
  resource?: string;
  from?: string;
  to?: string;
  q?: string;
  only?: 'securityEvents' | 'compliance';
}

/**
 * Which rows a query reads: `orgs`, a condition on `organizations o` (the principal's tenancy and the
 * orgId filter), and `rows`, conditions on `audit_logs a` to append (each ` AND ...`). Only the filters
 * given become SQL, so every plan sees plain conditions the indexes of 0060_audit_chain_links.sql serve. The
 * conditions read only the entry's columns, so they apply to audit_entries as to the audit_logs view.
 */
export interface AuditScope {
  orgs: string;
  rows: string;
  params: Params;
  /** Whether `rows` narrows the organizations' trails (a filter other than orgId). */
  filtered: boolean;
  /** Whether one organization is in view (orgId, or an organization user's own). */
  single: boolean;
  /**
   * When every filter but orgId is on the action (action, only) or q: the rows are counted from the counts per action
   * (audit_action_counts) of the actions that pass `actions` (conditions on `c.action`), plus, with q, the entries
   * whose action does not match q that pass `elsewhere` (conditions on `a`, each ` AND ...`). Otherwise null.
   */
  counted: { actions: string; elsewhere: string | null } | null;
}

/**
 * Soft-deleted organizations stay in scope: their trail stays readable to the partner (docs/ARCHITECTURE.md).
 * A row of an organization that never existed is in nobody's scope.
 */
export function auditScope(principal: Principal, filters: AuditFilters): AuditScope {
  const params: Params = { ...tenantParams(principal) };
  const orgs = [orgTenantSql('o')];
  const rows: string[] = [];
  // One organization in view: its id is also a condition on the rows, so the planner reads its own statistics
  // (one organization may hold most of the table) instead of an average over all organizations.
  const orgId = filters.orgId ?? (principal.scope === 'organization' ? principal.orgId : null);
  if (orgId) {
    orgs.push('o.id = :orgId::uuid');
    rows.push('a.org_id = :orgId::uuid');
    params.orgId = orgId;
  }
  const wholeTrails = rows.length;
  // The action is matched on its column, the other parts through the entry's search document (one trigram index holds
  // both), then against their own columns exactly where the document alone would match more (docs/audit.md
  // "Searching the trail").
  const exact = (name: 'user' | 'resource' | 'q', columns: string[]) =>
    `(${columns.map((column) => `${column} ILIKE :${name}::text`).join(' OR ')})`;
  const pattern = (name: 'user' | 'action' | 'resource' | 'q') => {
    const text = filters[name];
    if (text) params[name] = likePattern(text);
    return text;
  };
  const user = pattern('user');
  if (user) {
    const columns = exact('user', ['a.actor_email', "(a.details -> 'actor' ->> 'name')"]);
    rows.push(detailsShowVerbatim(user) ? `${searchDocument} ILIKE :user::text AND ${columns}` : columns);
  }
  if (pattern('action')) rows.push('a.action ILIKE :action::text');
  if (pattern('resource'))
    rows.push(
      `${searchDocument} ILIKE :resource::text AND ${exact('resource', ['a.resource_type', 'a.resource_name'])}`,
    );
  const q = pattern('q');
  // What q matches beside the action: a text without a line break matches the document exactly when it matches one
  // of its parts.
  const qElsewhere = !q
    ? null
    : q.includes('\n')
      ? `${searchDocument} ILIKE :q::text AND ${exact('q', ['a.actor_email', 'a.resource_type', 'a.resource_name', '(a.details::text)'])}`
      : `${searchDocument} ILIKE :q::text`;
  if (qElsewhere) rows.push(`(a.action ILIKE :q::text OR ${qElsewhere})`);
  if (filters.from) {
    rows.push('a.timestamp >= :from::timestamptz');
    params.from = filters.from;
  }
  if (filters.to) {
    rows.push('a.timestamp <= :to::timestamptz');
    params.to = filters.to;
  }
  const only = filters.only === 'securityEvents' ? securityEventActions : complianceActions;
  if (filters.only) rows.push(actionInSql('a.action', only));
  const onActions = !filters.user && !filters.resource && !filters.from && !filters.to;
  const actionsOn = (column: string) => [
    ...(filters.action ? [`${column} ILIKE :action::text`] : []),
    ...(filters.only ? [actionInSql(column, only)] : []),
  ];
  return {
    orgs: orgs.join(' AND '),
    rows: rows.map((condition) => ` AND ${condition}`).join(''),
    params,
    filtered: rows.length > wholeTrails,
    single: orgId !== null,
    counted:
      onActions && (filters.action || filters.only || q)
        ? {
            actions: [...actionsOn('c.action'), ...(q ? ['c.action ILIKE :q::text'] : [])].join(' AND ') || 'true',
            elsewhere: qElsewhere
              ? [...rows.slice(0, wholeTrails), ...actionsOn('a.action'), 'NOT a.action ILIKE :q::text', qElsewhere]
                  .map((condition) => ` AND ${condition}`)
                  .join('')
              : null,
          }
        : null,
  };
}

/**
 * The entry's search document (0105_audit_search_document.sql): actor e-mail, resource type, resource name and details
 * as text, one line each, as its trigram index holds it beside the action. A text without a line break matches it
 * exactly when it matches one of those parts: q is the action or the document.
 */
const searchDocument = 'audit_search_document(a.actor_email, a.resource_type, a.resource_name, a.details)';

/**
 * Whether a text appears in details as text exactly as written, so the document finds the actor's name with it:
 * JSON escapes only quotes, backslashes and control characters.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const detailsShowVerbatim = (text: string) => !/["\\\u0000-\u001f]/.test(text);

/** A row as the list formats need it. */
export type AuditEntryRow = AuditRow & {
  category: AuditCategory;
  /** The device hostname of an agent actor (the viewer shows it), looked up at read time. */
  actorHostname: string | null;
};

const entryColumns = `${auditRowColumns}, ${categorySql('a.action')} AS category, dv.hostname AS "actorHostname"`;
// Agents and devices are deleted softly, so an agent's hostname stays known to its old rows. Only a device of the
// row's own organization: an ingested event may name any agent id, and must not reveal another tenant's hostname.
const entryJoins = `${auditDetailsJoin} LEFT JOIN agents ag ON a.actor_type = 'agent' AND ag.id = a.actor_id
  LEFT JOIN devices dv ON dv.id = ag.device_id AND dv.org_id = a.org_id`;

/**
 * Newest first, stable: pos (insertion order, unique over all organizations) orders rows of one instant;
 * for the rows of one statement that is the order the chain sealed them in.
 */
const newestFirst = 'a.timestamp DESC, a.pos DESC';

/**
 * The newest `limit` entries in scope (after `offset`, or `after` a keyset cursor). Each organization hands over
 * only its own newest `offset + limit` entries, read off its (org_id, timestamp, pos) index, and only those are
 * merged: a page never sorts a whole trail, and a partner's view costs one short index scan per organization. The
 * page is cut from audit_entries alone; its rows' links are joined after (linkedSql), so a deep page skips index
 * entries instead of looking up the link of every row it skips.
 */
function newestSql(scope: AuditScope, page: { after?: boolean }): string {
  const cursor = page.after
    ? ' AND a.timestamp <= :afterTimestamp::timestamptz AND (a.timestamp, a.pos) < (:afterTimestamp::timestamptz, :afterPos::bigint)'
    : '';
  // One organization: its index answers the page directly, OFFSET included (a deep page skips index entries instead
  // of handing tens of thousands of rows to a merge). The organization check runs once, not per row.
  if (scope.single) {
    return `SELECT a.* FROM audit_entries a
     WHERE EXISTS (SELECT FROM organizations o WHERE ${scope.orgs})${scope.rows}${cursor}
     ORDER BY ${newestFirst}
     LIMIT :limit::int OFFSET :offset::int`;
  }
  return `SELECT a.* FROM organizations o
    CROSS JOIN LATERAL (
      SELECT a.* FROM audit_entries a
       WHERE a.org_id = o.id${scope.rows}${cursor}
       ORDER BY ${newestFirst}
       LIMIT :window::int
    ) a
   WHERE ${scope.orgs}
   ORDER BY ${newestFirst}
   LIMIT :limit::int OFFSET :offset::int`;
}

export async function selectAuditRows(
  db: Db,
  scope: AuditScope,
  page: { offset: number; limit: number },
): Promise<AuditEntryRow[]> {
  const { rows } = await db.query<AuditEntryRow>(
    `SELECT ${entryColumns} FROM (${linkedSql(newestSql(scope, {}))}) a ${entryJoins} ORDER BY ${newestFirst}`,
    { ...scope.params, window: page.offset + page.limit, limit: page.limit, offset: page.offset },
  );
  return rows;
}

/**
 * The rows in scope, counted exactly.
 *
 * Whole trails are counted from their chains instead, exactly and at any size: a chain holds every position
 * after its latest retention cut up to its head (docs/audit.md), so that is one probe per organization
 * where count(*) read a million index entries (~100 ms). A row deleted behind the chain's back is still counted;
 * verification reports it missing.
 */
export async function countAuditRows(db: Db, scope: AuditScope): Promise<number> {
  if (!scope.filtered) {
    const row = await one<{ total: number }>(
      db,
      `SELECT coalesce(sum(h.seq - coalesce((SELECT max(c.seq) FROM audit_chain_checkpoints c WHERE c.org_id = o.id), 0)), 0)::bigint AS total
         FROM organizations o JOIN audit_chain_heads h ON h.org_id = o.id
        WHERE ${scope.orgs}`,
      scope.params,
    );
    return row!.total;
  }
  // A filter on the action is summed from the organizations' counts per action (0105_audit_search_document.sql): a
  // few rows where counting the entries visits every matching one. A search adds the entries it matches only beyond
  // the action, found in the document's column of the index alone.
  if (scope.counted) {
    const { actions, elsewhere } = scope.counted;
    const [counted, found] = await Promise.all([
      one<{ total: number }>(
        db,
        `SELECT coalesce(sum(c.n), 0)::bigint AS total FROM organizations o JOIN audit_action_counts c ON c.org_id = o.id
          WHERE ${scope.orgs} AND ${actions}`,
        scope.params,
      ),
      elsewhere === null ? { total: 0 } : countEntries(db, scope, elsewhere),
    ]);
    return counted!.total + found.total;
  }
  // Counted off the entries alone: a link lookup per matching row would cost more than the count (an entry has no link
  // only if written with the triggers off, and the verifier reports it).
  // The bitmap of the matching rows is kept exact (a bit per row, not per page): under the default 4 MB work_mem a
  // broad filter's bitmap over a million rows turns lossy, and every row of those pages is rechecked (a search's five
  // ILIKEs, details::text included): p95 17.0 s instead of 1.8 s for one row in 8 of 1,000,000 (docs/benchmarks.md).
  return (await countEntries(db, scope, scope.rows)).total;
}

/** The entries in the scope's organizations that pass `rows`, counted with an exact bitmap. */
function countEntries(db: Db, scope: AuditScope, rows: string): Promise<{ total: number }> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT set_config('work_mem', '${countWorkMem}', true)`);
    const row = await one<{ total: number }>(
      tx,
      `SELECT count(*) AS total FROM organizations o JOIN audit_entries a ON a.org_id = o.id WHERE ${scope.orgs}${rows}`,
      scope.params,
    );
    return row!;
  });
}

/** work_mem of a filtered count: an exact bitmap of about 10,000,000 rows (used only as far as needed). */
const countWorkMem = '64MB';

export function selectAuditRow(db: Db, scope: AuditScope, id: string): Promise<AuditEntryRow | undefined> {
  return one<AuditEntryRow>(
    db,
    `SELECT ${entryColumns} FROM audit_logs a JOIN organizations o ON o.id = a.org_id ${entryJoins} WHERE a.id = :id::uuid AND ${scope.orgs}${scope.rows}`,
    { ...scope.params, id },
  );
}

/** The organization the scope names, if the principal may read its trail (soft-deleted included). */
export function selectScopedOrganization(db: Db, scope: AuditScope) {
  return one<{ id: string }>(db, `SELECT o.id::text AS id FROM organizations o WHERE ${scope.orgs}`, scope.params);
}

/** A position in the newest-first order, to read on after it. */
export type ExportCursor = Pick<AuditRow, 'timestamp'> & { pos: number };

/**
 * The next rows of an export after `after` (none: from the newest), newest first, with the canonical values
 * of the chain (docs/audit.md): at most `rows` rows and about `bytes` bytes, always at least one.
 */
export async function selectExportPage(
  db: Db,
  scope: AuditScope,
  page: { after?: ExportCursor; rows: number; bytes: number },
): Promise<(AuditRow & ExportCursor)[]> {
  const { rows } = await db.query<AuditRow & ExportCursor>(
    sizedAuditRowsSql(linkedSql(newestSql(scope, { after: page.after !== undefined })), newestFirst, ', a.pos'),
    {
      ...scope.params,
      window: page.rows,
      limit: page.rows,
      offset: 0,
      bytes: page.bytes,
      ...(page.after ? { afterTimestamp: page.after.timestamp, afterPos: page.after.pos } : {}),
    },
  );
  return rows;
}

/** Rows in scope counted per category, result and actor type (one group per combination that occurs). */
export async function countAuditRowsByKind(db: Db, scope: AuditScope) {
  const { rows } = await db.query<{
    category: AuditCategory;
    result: AuditResult;
    actorType: ActorType;
    total: number;
  }>(
    // Grouped by action first, so the category is worked out once per action, not once per row.
    `SELECT ${categorySql('g.action')} AS category, g.result, g."actorType", sum(g.total)::bigint AS total
       FROM (SELECT a.action, a.result::text AS result, a.actor_type::text AS "actorType", count(*) AS total
               FROM organizations o JOIN audit_entries a ON a.org_id = o.id
              WHERE ${scope.orgs}${scope.rows}
              GROUP BY 1, 2, 3) g
      GROUP BY 1, 2, 3`,
    scope.params,
  );
  return rows;
}

/** Rows in scope counted per action (from the counts per action when the filters are on the action alone). */
export async function countAuditRowsByAction(db: Db, scope: AuditScope) {
  if (scope.counted && scope.counted.elsewhere === null) {
    const { rows } = await db.query<{ action: string; total: number }>(
      `SELECT c.action, sum(c.n)::bigint AS total FROM organizations o JOIN audit_action_counts c ON c.org_id = o.id
        WHERE ${scope.orgs} AND ${scope.counted.actions} GROUP BY c.action HAVING sum(c.n) > 0`,
      scope.params,
    );
    return rows;
  }
  const { rows } = await db.query<{ action: string; total: number }>(
    `SELECT a.action, count(*) AS total FROM organizations o JOIN audit_entries a ON a.org_id = o.id WHERE ${scope.orgs}${scope.rows} GROUP BY a.action`,
    scope.params,
  );
  return rows;
}
