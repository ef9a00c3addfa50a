import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { changedFields } from './changes.ts';
import { defaultRetentionDays, type updateRetentionPolicy as updateSchema } from './retention-schemas.ts';
import { type RetentionPolicyRow, selectRetentionPolicy, upsertRetentionPolicy } from './retention-store.ts';
import { type AuditContext, auditChange } from './writer.ts';

/** The policy with `configured`; without a row, the defaults and configured false. */
function policyOf(orgId: string, row: RetentionPolicyRow | undefined) {
  return row
    ? {
        orgId,
        retentionDays: row.retentionDays,
        archiveToS3: row.archiveToS3,
        lastCleanupAt: row.lastCleanupAt,
        configured: true,
      }
    : { orgId, retentionDays: defaultRetentionDays, archiveToS3: false, lastCleanupAt: null, configured: false };
}

/** The organization's audit retention policy (audit:read; another tenant's organization is 404). */
export async function getRetentionPolicy(db: Db, principal: Principal, orgId: string) {
  await reachableOrganization(db, principal, orgId, 'audit:read');
  return policyOf(orgId, await selectRetentionPolicy(db, orgId));
}

/**
 * Saves the policy, creating it when the organization has none (the worker then starts pruning it).
 * Needs audit:manage. Audited as organization.update with retentionDays before and after; before is
 * null when there was no policy (the rows were kept without limit).
 */
export async function updateRetentionPolicy(
  db: Db,
  principal: Principal,
  orgId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'audit:manage');
  const after = await db.transaction(async (tx) => {
    const before = await selectRetentionPolicy(tx, orgId, true);
    const after = await upsertRetentionPolicy(tx, orgId, change.retentionDays);
    await auditChange(tx, audit, {
      orgId,
      action: 'organization.update',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: org.name,
      details: changedFields({ retentionDays: before?.retentionDays ?? null }, after, ['retentionDays']),
    });
    return after;
  });
  return policyOf(orgId, after);
}
