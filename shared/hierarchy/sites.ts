import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { assertReachable } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { DomainError, NotFound, ValidationFailed } from '../errors.ts';
import { tellZoneChanged } from '../queue/device-events.ts';
import type { createSite as createSchema, updateSite as updateSchema } from './schemas.ts';
import * as store from './store.ts';

export async function listSites(db: Db, principal: Principal, orgId: string, page: Page) {
  await reachableOrganization(db, principal, orgId, 'orgs:read');
  return store.selectSites(db, orgId, page);
}

export async function getSite(db: Db, principal: Principal, orgId: string, siteId: string) {
  await reachableOrganization(db, principal, orgId, 'orgs:read');
  return assertReachable(await store.selectSite(db, orgId, siteId), 'Site');
}

const siteFields = ['name', 'timezone', 'address'] as const;
const siteResource = (site: { id: string; name: string }) => ({
  resourceType: 'site',
  resourceId: site.id,
  resourceName: site.name,
});

/** Audited as site.create with its fields. */
export async function createSite(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof createSchema>,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, 'sites:write');
  return db.transaction(async (tx) => {
    const site = await store.insertSite(tx, orgId, input);
    await auditChange(tx, audit, {
      orgId,
      action: 'site.create',
      ...siteResource(site),
      details: { after: { name: site.name, timezone: site.timezone, address: site.address } },
    });
    return site;
  });
}

export async function updateSite(
  db: Db,
  principal: Principal,
  orgId: string,
  siteId: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, 'sites:write');
  const before = assertReachable(await store.selectSite(db, orgId, siteId), 'Site');
  const after = await db.transaction(async (tx) => {
    const after = assertReachable(await store.updateSiteRow(tx, orgId, siteId, change), 'Site');
    await auditChange(tx, audit, {
      orgId,
      action: 'site.update',
      ...siteResource(after),
      details: changedFields(before, after, [...siteFields]),
    });
    return after;
  });
  // Its devices now keep another local time: device-local schedules are armed in it.
  if (after.timezone !== before.timezone) await tellZoneChanged(orgId, after.timezone ?? 'UTC');
  return after;
}

/**
 * Inside a writer's transaction, before any other lock: makes sure `siteId` is a live site of the
 * organization and keeps it so until commit. The organization row is taken FOR SHARE, which waits
 * for a site deletion in progress (it holds the row FOR UPDATE) and holds off the next one.
 * 400 naming body.siteId when it is no live site of the organization.
 */
export async function holdLiveSite(tx: Db, orgId: string, siteId: string): Promise<void> {
  if (!(await store.lockOrganization(tx, orgId, 'share'))) throw NotFound('Organization');
  if (!(await store.selectSite(tx, orgId, siteId))) {
    throw ValidationFailed('siteId is not a site of this organization', [
      { path: 'body.siteId', message: 'Unknown site', code: 'custom' },
    ]);
  }
}

/**
 * Deletes a site that holds no devices; never the organization's last one (each organization needs a site).
 * The organization row is locked so two deletions cannot both pass.
 */
export async function deleteSite(db: Db, principal: Principal, orgId: string, siteId: string, audit: AuditContext) {
  await reachableOrganization(db, principal, orgId, 'sites:write');
  await db.transaction(async (tx) => {
    await store.lockOrganization(tx, orgId, 'update');
    const site = assertReachable(await store.selectSite(tx, orgId, siteId), 'Site');
    const usage = (await store.siteUsage(tx, orgId, siteId))!;
    if (usage.sites <= 1)
      throw new DomainError('LAST_SITE', 'An organization needs at least one site; this is its last');
    if (usage.devices > 0)
      throw new DomainError(
        'SITE_NOT_EMPTY',
        `The site still holds ${usage.devices} device(s); move or delete them first`,
      );
    await store.softDeleteSite(tx, orgId, siteId);
    await auditChange(tx, audit, {
      orgId,
      action: 'site.delete',
      ...siteResource(site),
      details: { before: { name: site.name, timezone: site.timezone, address: site.address } },
    });
  });
}
