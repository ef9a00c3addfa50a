/**
 * The partner's patch catalogue as technicians read it (with counts of the devices in reach by state) and the manual
 * decisions on a patch: approve, decline, defer until, for the partner or one organization, for every ring or one.
 * Each decision is audited (patch.approve, patch.decline, patch.defer) in its own transaction.
 */
import type { z } from 'zod';
import { auditPartnerChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission, tenantParams } from '../auth/tenancy.ts';
import { type Db, one, type Tx } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import { Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { ringById } from './rings.ts';
import type { decision as decisionSchema, patch as patchSchema } from './schemas.ts';

type DecisionReply = z.input<typeof decisionSchema>;
type PatchReply = z.input<typeof patchSchema>;

const invalid = (path: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${path}`, message, code: 'custom' }]);

export type Decision = 'approved' | 'declined' | 'deferred';

const patchColumns = `p.id, p.source, p.external_id AS "externalId", p.kb, p.title,
  p.vendor, p.product, p.severity, p.category, p.vendor_category AS "vendorCategory", p.release_date AS "releaseDate",
  p.first_seen_at AS "firstSeenAt", p.requires_reboot AS "requiresReboot", p.supersedes, p.cves`;

/**
 * Which devices' states a principal counts: an organization's caller its organization's; a partner's caller its
 * organizations' (or one); a platform caller every one (or one). `o` is the device's organization.
 */
const countedOrg = `o.deleted_at IS NULL AND (:orgId::uuid IS NULL OR o.id = :orgId::uuid)
  AND (:tenantScope::text = 'platform' OR (:tenantScope::text = 'partner' AND o.partner_id = :tenantPartnerId::uuid)
       OR (:tenantScope::text = 'organization' AND o.id = :tenantOrgId::uuid))`;

/**
 * A catalogue entry the principal reaches: a partner's caller the partner's entries; an organization's caller the
 * entries its devices listed or its organization decided on (other organizations' patches are not its to know).
 */
const reachablePatch = `(:tenantScope::text = 'platform'
  OR (:tenantScope::text = 'partner' AND p.partner_id = :tenantPartnerId::uuid)
  OR (:tenantScope::text = 'organization'
      AND (EXISTS (SELECT 1 FROM device_patches x WHERE x.patch_id = p.id AND x.org_id = :tenantOrgId::uuid)
           OR EXISTS (SELECT 1 FROM patch_decisions x WHERE x.patch_id = p.id AND x.org_id = :tenantOrgId::uuid))))`;

const countsSql = `(SELECT jsonb_build_object(
    'missing', count(*) FILTER (WHERE dp.state = 'missing'),
    'installed', count(*) FILTER (WHERE dp.state = 'installed'),
    'failed', count(*) FILTER (WHERE dp.state = 'failed'),
    'pendingReboot', count(*) FILTER (WHERE dp.state = 'pending-reboot'))
   FROM device_patches dp JOIN organizations o ON o.id = dp.org_id
  WHERE dp.patch_id = p.id AND ${countedOrg}) AS counts`;

async function scopeOrg(db: Db, principal: Principal, orgId: string | undefined) {
  requirePermission(principal, 'patching:read');
  if (orgId) await reachableOrganization(db, principal, orgId, 'patching:read');
}

export async function listPatches(
  db: Db,
  principal: Principal,
  query: Page & { orgId?: string; severity?: string; category?: string; state?: string },
) {
  await scopeOrg(db, principal, query.orgId);
  return selectPage<PatchReply>(
    db,
    `${patchColumns}, ${countsSql}`,
    `patches p WHERE ${reachablePatch}
       AND (:severity::text IS NULL OR p.severity = :severity::text)
       AND (:category::text IS NULL OR p.category = :category::text)
       AND (:orgId::uuid IS NULL OR EXISTS (SELECT 1 FROM device_patches x WHERE x.patch_id = p.id AND x.org_id = :orgId::uuid))
       AND (:state::text IS NULL OR EXISTS (
             SELECT 1 FROM device_patches dp JOIN organizations o ON o.id = dp.org_id
              WHERE dp.patch_id = p.id AND dp.state = :state::text AND ${countedOrg}))`,
    'p.release_date DESC NULLS LAST, p.title, p.id',
    {
      ...tenantParams(principal),
      orgId: query.orgId ?? null,
      severity: query.severity ?? null,
      category: query.category ?? null,
      state: query.state ?? null,
    },
    query,
  );
}

export function selectReachablePatch(db: Db, principal: Principal, id: string, orgId: string | null = null) {
  return one<PatchReply & { partnerId: string }>(
    db,
    `SELECT ${patchColumns}, p.partner_id AS "partnerId", ${countsSql}
       FROM patches p WHERE p.id = :id::uuid AND ${reachablePatch}`,
    { id, orgId, ...tenantParams(principal) },
  );
}

const decisionColumns = `d.id, d.patch_id AS "patchId", d.org_id AS "orgId", d.ring_id AS "ringId", d.decision,
  d.until, d.decided_by AS "decidedBy", d.decided_at AS "decidedAt"`;

export async function getPatch(db: Db, principal: Principal, id: string, orgId?: string) {
  await scopeOrg(db, principal, orgId);
  const patch = await selectReachablePatch(db, principal, id, orgId ?? null);
  if (!patch) throw NotFound('Patch');
  const { rows } = await db.query<DecisionReply>(
    `SELECT ${decisionColumns} FROM patch_decisions d
      WHERE d.patch_id = :id::uuid
        AND (d.org_id IS NULL OR :tenantScope::text <> 'organization' OR d.org_id = :tenantOrgId::uuid)
      ORDER BY d.org_id NULLS FIRST, d.ring_id NULLS FIRST`,
    { id, ...tenantParams(principal) },
  );
  const { partnerId: _, ...reply } = patch;
  return { ...reply, decisions: rows };
}

const actions: Record<Decision, string> = {
  approved: 'patch.approve',
  declined: 'patch.decline',
  deferred: 'patch.defer',
};

/** Who decides for whom: an organization's caller for its organization only; a partner-wide decision needs a partner. */
async function decisionScope(db: Db, principal: Principal, body: { orgId?: string; ringId?: string }) {
  requirePermission(principal, 'patching:manage');
  if (body.orgId) await reachableOrganization(db, principal, body.orgId, 'patching:manage');
  else if (principal.scope === 'organization')
    throw Forbidden('Organization users decide for their organization: give orgId');
  if (body.ringId) {
    const ring = await ringById(db, body.ringId);
    if (!ring || (principal.scope !== 'platform' && ring.partnerId !== principal.partnerId))
      throw invalid('ringId', 'ringId is not a ring of a patching policy you reach');
    if (principal.scope === 'organization' && ring.orgId !== null && ring.orgId !== principal.orgId)
      throw invalid('ringId', 'ringId is not a ring of a patching policy you reach');
  }
}

/** Records one decision (replacing the one of the same scope) and audits it, in one transaction. */
async function writeDecision(
  tx: Tx,
  principal: Principal,
  patch: { id: string; partnerId: string; title: string; kb?: string | null },
  body: { orgId?: string; ringId?: string; until?: string },
  decision: Decision,
  audit: AuditContext,
) {
  const row = await one<DecisionReply>(
    tx,
    `INSERT INTO patch_decisions AS d (patch_id, partner_id, org_id, ring_id, decision, until, decided_by)
     VALUES (:patchId::uuid, :partnerId::uuid, :orgId::uuid, :ringId::uuid, :decision::text, :until::timestamptz,
             :actor::jsonb)
     ON CONFLICT (patch_id, coalesce(org_id, '00000000-0000-0000-0000-000000000000'),
                  coalesce(ring_id, '00000000-0000-0000-0000-000000000000'))
     DO UPDATE SET decision = excluded.decision, until = excluded.until, decided_by = excluded.decided_by,
                   decided_at = now()
     RETURNING ${decisionColumns}`,
    {
      patchId: patch.id,
      partnerId: patch.partnerId,
      orgId: body.orgId ?? null,
      ringId: body.ringId ?? null,
      decision,
      until: body.until ?? null,
      actor: { actorType: principal.actorType, id: principal.id, email: principal.email, name: principal.name },
    },
  );
  const event = {
    action: actions[decision],
    resourceType: 'patch',
    resourceId: patch.id,
    resourceName: patch.kb ? `${patch.kb} ${patch.title}`.slice(0, 255) : patch.title.slice(0, 255),
    details: { decision, orgId: body.orgId ?? null, ringId: body.ringId ?? null, until: body.until ?? null },
  };
  if (body.orgId) await auditChange(tx, audit, { ...event, orgId: body.orgId });
  else await auditPartnerChange(tx, audit, patch.partnerId, event);
  return row!;
}

export async function decidePatch(
  db: Db,
  principal: Principal,
  id: string,
  body: { orgId?: string; ringId?: string; until?: string },
  decision: Decision,
  audit: AuditContext,
) {
  await decisionScope(db, principal, body);
  const patch = await selectReachablePatch(db, principal, id);
  if (!patch) throw NotFound('Patch');
  if (decision === 'deferred' && body.until && Date.parse(body.until) <= Date.now())
    throw invalid('until', 'until must lie in the future');
  return db.transaction((tx) => writeDecision(tx, principal, patch, body, decision, audit));
}

/** Approves several patches at once: all or none (an unknown or unreachable one is a 400 naming it). */
export async function bulkApprove(
  db: Db,
  principal: Principal,
  body: { patchIds: string[]; orgId?: string },
  audit: AuditContext,
) {
  await decisionScope(db, principal, body);
  const patches: NonNullable<Awaited<ReturnType<typeof selectReachablePatch>>>[] = [];
  for (const [index, id] of body.patchIds.entries()) {
    const patch = await selectReachablePatch(db, principal, id);
    if (!patch) throw invalid(`patchIds.${index}`, 'Not a patch of your catalogue');
    patches.push(patch);
  }
  const decisions = await db.transaction(async (tx) => {
    const rows = [];
    for (const patch of patches) rows.push(await writeDecision(tx, principal, patch, body, 'approved', audit));
    return rows;
  });
  return { approved: decisions.length, decisions };
}
