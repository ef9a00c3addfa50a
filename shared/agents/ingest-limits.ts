import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { Forbidden } from '../errors.ts';
import { defaultBudget } from './ingest-budget.ts';
import type { updateIngestLimits as updateSchema } from './schemas.ts';
import { type IngestLimitOverrides, selectIngestLimits, upsertIngestLimits } from './store.ts';

const noOverrides: IngestLimitOverrides = { logsPerDeviceHour: null, eventsPerDeviceHour: null };

function limitsOf(orgId: string, overrides: IngestLimitOverrides) {
  return {
    orgId,
    logsPerDeviceHour: overrides.logsPerDeviceHour ?? defaultBudget('logs'),
    eventsPerDeviceHour: overrides.eventsPerDeviceHour ?? defaultBudget('events'),
    overrides: { logsPerDeviceHour: overrides.logsPerDeviceHour, eventsPerDeviceHour: overrides.eventsPerDeviceHour },
  };
}

/** The hourly ingest budgets per device in force for the organization (orgs:read). */
export async function getIngestLimits(db: Db, principal: Principal, orgId: string) {
  await reachableOrganization(db, principal, orgId, 'orgs:read');
  return limitsOf(orgId, (await selectIngestLimits(db, orgId)) ?? noOverrides);
}

/**
 * Changes them (orgs:write). The budgets protect the partner's database from its customers' devices,
 * so only partner and platform users set them, never the organization's own users. Audited as
 * organization.update with the overrides before and after.
 */
export async function updateIngestLimits(
  db: Db,
  principal: Principal,
  orgId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'orgs:write');
  if (principal.scope === 'organization') throw Forbidden('Ingest limits are set by the partner');
  const after = await db.transaction(async (tx) => {
    const before = (await selectIngestLimits(tx, orgId, true)) ?? noOverrides;
    const after = await upsertIngestLimits(tx, orgId, change, principal.id);
    await auditChange(tx, audit, {
      orgId,
      action: 'organization.update',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: org.name,
      details: changedFields(before, after, ['logsPerDeviceHour', 'eventsPerDeviceHour']),
    });
    return after;
  });
  return limitsOf(orgId, after);
}
