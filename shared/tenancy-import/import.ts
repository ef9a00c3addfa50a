import type { z } from 'zod';
import { type AuditContext, auditChange, type RouteEvent } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { Forbidden } from '../errors.ts';
import { insertOrganizationWithSite } from '../hierarchy/organizations.ts';
import { insertSite } from '../hierarchy/store.ts';
import { importRecords } from '../imports/csv.ts';
import { nameKey } from '../imports/name-key.ts';
import {
  type DerivedRow,
  decide,
  givenExternalId,
  invalidRow,
  plannedOutcome,
  reportRow,
  rowIssues,
  rowNumberOf,
  summarize,
} from '../imports/rows.ts';
import type { Outcome } from '../imports/schemas.ts';
import { type TreeRow, type treeImport, treeRow } from './schemas.ts';
import { linkOrganization, type OrgRecord, selectPartnerTree, setSourceSystem } from './store.ts';

type ImportInput = z.output<typeof treeImport>;
type Tree = Awaited<ReturnType<typeof selectPartnerTree>>;
const maxRows = 1000;
const fields = ['name', 'sourceSystem', 'externalId', 'siteName', 'timezone'] as const;
const fold = nameKey;

interface Derived extends DerivedRow {
  values?: TreeRow;
  /** The organization a matched or create row belongs to already (linked by externalId). */
  linkedOrg?: Tree[number];
  /** The site a matched row names. */
  siteId?: string;
}

/** The rows of a request, JSON or CSV, in one form; a CSV row's acknowledgement given by its row number. */
function givenRows(input: ImportInput): Record<string, unknown>[] {
  const acks = new Map((input.acknowledgements ?? []).map(({ row, ...ack }) => [row, ack]));
  return importRecords(input, { fields, maxRows }).map((record, index) =>
    acks.has(rowNumberOf(index)) ? { ...record, acknowledge: acks.get(rowNumberOf(index)) } : record,
  );
}

/**
 * Annotates each row against the partner's tree: `invalid` (field and reason, a sourceSystem other than the
 * import's among them); `conflict` (an externalId given two names, a site twice, or a same-named organization linked
 * to another externalId of the system); `unchanged` when the externalId is linked and the site exists (a re-import
 * changes nothing); `create` for a new
 * organization, or a new site of a linked one; `name-match` when an organization has the name but not the
 * externalId, held until acknowledged (link to it with targetId, or create a new one without).
 */
function derive(
  tree: Tree,
  given: Record<string, unknown>[],
  sourceSystem: string,
): (Derived & { ack?: TreeRow['acknowledge'] })[] {
  const parsed = given.map((raw) => {
    const result = treeRow.safeParse(raw);
    if (!result.success || (result.data.sourceSystem ?? sourceSystem) === sourceSystem) return result;
    const message = `The import's sourceSystem is ${sourceSystem}; a row may only repeat it`;
    return { success: false as const, issues: [{ path: 'sourceSystem', message }] };
  });
  const namesPerId = new Map<string, Set<string>>();
  const sitesPerOrg = new Map<string, number>();
  const orgKey = (v: TreeRow) => (v.externalId ? `x:${v.externalId}` : `n:${fold(v.name)}`);
  for (const result of parsed) {
    if (!result.success) continue;
    const v = result.data;
    if (v.externalId) namesPerId.set(v.externalId, new Set([...(namesPerId.get(v.externalId) ?? []), fold(v.name)]));
    const siteKey = `${orgKey(v)}/${fold(v.siteName ?? '')}`;
    sitesPerOrg.set(siteKey, (sitesPerOrg.get(siteKey) ?? 0) + 1);
  }
  const linked = new Map(
    tree.filter((o) => o.sourceSystem === sourceSystem && o.externalId).map((o) => [o.externalId!, o]),
  );
  const byName = new Map<string, Tree[number]>();
  for (const org of tree) if (!byName.has(fold(org.name))) byName.set(fold(org.name), org);

  return parsed.map((result, index): Derived & { ack?: TreeRow['acknowledge'] } => {
    const row = rowNumberOf(index);
    if (!result.success)
      return invalidRow(
        row,
        'error' in result ? rowIssues(result.error) : result.issues,
        givenExternalId(given[index]!),
      );
    const { acknowledge: ack, sourceSystem: _same, ...values } = result.data;
    const base = { row, ...(values.externalId ? { externalId: values.externalId } : {}), values, ack };
    if (values.externalId && namesPerId.get(values.externalId)!.size > 1)
      return { ...base, annotation: 'conflict', reason: 'Rows of this import give the externalId different names' };
    if (sitesPerOrg.get(`${orgKey(values)}/${fold(values.siteName ?? '')}`)! > 1)
      return {
        ...base,
        annotation: 'conflict',
        reason: 'Another row of this import names the same organization and site',
      };
    const org = values.externalId ? linked.get(values.externalId) : undefined;
    if (org) {
      const site = values.siteName ? org.sites.find((s) => fold(s.name) === fold(values.siteName!)) : undefined;
      if (values.siteName && !site)
        return { ...base, annotation: 'create', linkedOrg: org, reason: 'A new site of a linked organization' };
      return { ...base, annotation: 'unchanged', linkedOrg: org, siteId: site?.id };
    }
    const named = byName.get(fold(values.name));
    if (named && named.sourceSystem === sourceSystem && named.externalId && named.externalId !== values.externalId)
      return {
        ...base,
        annotation: 'conflict',
        reason: `An organization of this name is linked to ${sourceSystem} externalId ${named.externalId}`,
      };
    if (named)
      return {
        ...base,
        annotation: 'name-match',
        targetId: named.id,
        reason: 'An organization has this name but not the externalId',
      };
    return { ...base, annotation: 'create' };
  });
}

const present = (
  row: Derived,
  outcome: Outcome,
  extra: { organizationId?: string; siteId?: string; reason?: string } = {},
) => ({
  ...reportRow(row, outcome, extra.reason ?? row.reason),
  ...(row.values ? { name: row.values.name, ...(row.values.siteName ? { siteName: row.values.siteName } : {}) } : {}),
  ...((extra.organizationId ?? row.linkedOrg?.id ?? row.targetId)
    ? { organizationId: extra.organizationId ?? row.linkedOrg?.id ?? row.targetId }
    : {}),
  ...((extra.siteId ?? row.siteId) ? { siteId: extra.siteId ?? row.siteId } : {}),
});

/** Tenancy-tree imports are the partner's: its users only. */
function partnerOf(principal: Principal) {
  requirePermission(principal, 'orgs:write');
  if (principal.scope !== 'partner' || !principal.partnerId)
    throw Forbidden('Only partner users import a tenancy tree');
  return principal.partnerId;
}

/** POST /orgs/import/preview: every row annotated, nothing stored. */
export async function previewTreeImport(db: Db, principal: Principal, input: ImportInput) {
  const partnerId = partnerOf(principal);
  const rows = derive(await selectPartnerTree(db, partnerId), givenRows(input), input.sourceSystem).map((row) =>
    present(row, plannedOutcome(row.annotation)),
  );
  return { committed: false, summary: summarize(rows), rows };
}

type AuditEvents = RouteEvent[];

/**
 * Applies each row's decision in order: a held row acknowledged with its target links that organization (and adds
 * the row's site); a create row adds a site to a linked organization, or to one an earlier row of this import
 * created, or creates the organization with its site. Returns the row reports, the audit events and the
 * organizations touched.
 */
async function applyRows(tx: Db, partnerId: string, sourceSystem: string, derived: ReturnType<typeof derive>) {
  const events: AuditEvents = [];
  const touched = new Map<string, string>();
  const created = new Map<string, { id: string; sites: Map<string, string> }>();

  const addSite = async (org: { id: string; name: string }, row: TreeRow) => {
    const site = await insertSite(tx, org.id, { name: row.siteName!, timezone: row.timezone });
    events.push({
      orgId: org.id,
      action: 'site.create',
      resourceType: 'site',
      resourceId: site!.id as string,
      resourceName: row.siteName!,
      details: { timezone: row.timezone ?? null, sourceSystem },
    });
    touched.set(org.id, org.name);
    return site!.id as string;
  };

  const link = async (row: Derived, values: TreeRow) => {
    const target = { id: row.targetId!, name: values.name } satisfies Pick<OrgRecord, 'id' | 'name'>;
    if (values.externalId) await linkOrganization(tx, target.id, sourceSystem, values.externalId);
    events.push({
      orgId: target.id,
      action: 'organization.update',
      resourceType: 'organization',
      resourceId: target.id,
      resourceName: values.name,
      details: { before: {}, after: { sourceSystem, externalId: values.externalId ?? null } },
    });
    touched.set(target.id, values.name);
    const siteId = values.siteName ? await addSite(target, values) : undefined;
    return present(row, 'update', { organizationId: target.id, siteId });
  };

  const create = async (row: Derived, values: TreeRow) => {
    if (row.linkedOrg) return present(row, 'create', { siteId: await addSite(row.linkedOrg, values) });
    const key = values.externalId ? `x:${values.externalId}` : `n:${fold(values.name)}`;
    const earlier = created.get(key);
    if (earlier) {
      const siteId =
        earlier.sites.get(fold(values.siteName ?? 'Main')) ??
        (await addSite({ id: earlier.id, name: values.name }, values));
      return present(row, 'create', { organizationId: earlier.id, siteId });
    }
    const org = await insertOrganizationWithSite(
      tx,
      { partnerId, name: values.name, externalId: values.externalId },
      { name: values.siteName ?? 'Main', timezone: values.timezone },
    );
    if (values.externalId) await setSourceSystem(tx, org.id, sourceSystem);
    const siteId = org.site!.id as string;
    created.set(key, { id: org.id, sites: new Map([[fold(values.siteName ?? 'Main'), siteId]]) });
    touched.set(org.id, values.name);
    events.push(
      {
        orgId: org.id,
        action: 'organization.create',
        resourceType: 'organization',
        resourceId: org.id,
        resourceName: values.name,
        details: { sourceSystem, externalId: values.externalId ?? null },
      },
      {
        orgId: org.id,
        action: 'site.create',
        resourceType: 'site',
        resourceId: siteId,
        resourceName: values.siteName ?? 'Main',
        details: { timezone: values.timezone ?? null, sourceSystem },
      },
    );
    return present(row, 'create', { organizationId: org.id, siteId });
  };

  const rows = [];
  for (const row of derived) {
    const decision = decide(row, row.ack);
    if (decision.apply === null) rows.push(present(row, decision.outcome, { reason: decision.reason }));
    else if (decision.apply === 'update') rows.push(await link(row, row.values!));
    else rows.push(await create(row, row.values!));
  }
  return { rows, events, touched };
}

/**
 * POST /orgs/import: re-derives every row in one transaction and applies what preview announced (a row whose
 * annotation changed since is refused); audited per organization and site created or linked, and with the import's
 * summary in every organization it touched (an audit row belongs to an organization).
 */
export async function commitTreeImport(db: Db, principal: Principal, input: ImportInput, audit: AuditContext) {
  const partnerId = partnerOf(principal);
  const given = givenRows(input);
  const { rows, summary } = await db.transaction(async (tx) => {
    const derived = derive(await selectPartnerTree(tx, partnerId), given, input.sourceSystem);
    const { rows, events, touched } = await applyRows(tx, partnerId, input.sourceSystem, derived);
    const summary = summarize(rows);
    for (const [orgId, name] of touched)
      events.push({
        orgId,
        action: 'organization.import',
        resourceType: 'organization',
        resourceId: orgId,
        resourceName: name,
        details: { sourceSystem: input.sourceSystem, rows: rows.length, ...summary },
      });
    await auditChange(tx, audit, events);
    return { rows, summary };
  });
  return { committed: true, summary, rows };
}
