import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { defaultRetentionDays } from '../audit/retention-schemas.ts';
import { insertRetentionPolicy } from '../audit/retention-store.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import type { createOrganization as createSchema, updateOrganization as updateSchema } from './schemas.ts';
import * as store from './store.ts';

/**
 * Creates an organization with its first site and its audit retention policy, in one transaction. No audit row: the
 * organization's trail begins with its first change (the partner's own trail is where its creation belongs).
 * Partner users create in their own partner; platform administrators name the partner.
 */
export async function createOrganization(db: Db, principal: Principal, input: z.output<typeof createSchema>) {
  requirePermission(principal, 'orgs:write');
  if (principal.scope === 'organization') throw Forbidden('Organization users cannot create organizations');
  let partnerId: string;
  if (principal.scope === 'platform') {
    if (!input.partnerId)
      throw ValidationFailed('partnerId is required', [
        { path: 'body.partnerId', message: 'Required for platform administrators', code: 'invalid_type' },
      ]);
    partnerId = input.partnerId;
  } else {
    if (input.partnerId && input.partnerId !== principal.partnerId) throw NotFound('Partner');
    partnerId = principal.partnerId!;
  }
  return db.transaction(async (tx) => {
    if (!(await store.partnerExists(tx, partnerId))) throw NotFound('Partner');
    return insertOrganizationWithSite(
      tx,
      { partnerId, name: input.name, externalId: input.externalId },
      { name: 'Main', ...input.site },
    );
  });
}

/**
 * Every path that creates an organization goes through here (the API, seeds, benchmarks): the organization,
 * its first site and its audit retention policy, in the caller's transaction.
 */
export async function insertOrganizationWithSite(
  tx: Db,
  org: { partnerId: string; name: string; externalId?: string },
  site: { name: string; timezone?: string; address?: string },
) {
  const created = await store.insertOrganization(tx, org);
  const firstSite = await store.insertSite(tx, created.id, site);
  // Every new organization keeps its audit trail 365 days until it says otherwise.
  await insertRetentionPolicy(tx, created.id, defaultRetentionDays);
  return { ...created, site: firstSite };
}

export function getOrganization(db: Db, principal: Principal, id: string) {
  return reachableOrganization(db, principal, id, 'orgs:read');
}

export function listOrganizations(db: Db, principal: Principal, query: Page & { search?: string; partnerId?: string }) {
  requirePermission(principal, 'orgs:read');
  return store.selectOrganizations(db, principal, query, query);
}

/** Audited as organization.update with the changed fields before and after. */
export async function updateOrganization(
  db: Db,
  principal: Principal,
  id: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const before = await reachableOrganization(db, principal, id, 'orgs:write');
  return db.transaction(async (tx) => {
    const after = assertReachable(await store.updateOrganizationRow(tx, id, change), 'Organization');
    await auditChange(tx, audit, {
      orgId: id,
      action: 'organization.update',
      ...organizationResource(after),
      details: changedFields(before, after, ['name', 'externalId']),
    });
    return after;
  });
}

/** Soft delete by the partner (or platform): the trail and history stay. Audited as organization.update (deleted). */
export async function deleteOrganization(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const org = await reachableOrganization(db, principal, id, 'orgs:write');
  if (principal.scope === 'organization') throw Forbidden('Organization users cannot delete their organization');
  await db.transaction(async (tx) => {
    if (!(await store.softDeleteOrganization(tx, id))) throw NotFound('Organization');
    await auditChange(tx, audit, {
      orgId: id,
      action: 'organization.update',
      ...organizationResource(org),
      details: { before: { deleted: false }, after: { deleted: true } },
    });
  });
}

const organizationResource = (org: { id: string; name: string }) => ({
  resourceType: 'organization',
  resourceId: org.id,
  resourceName: org.name,
});
