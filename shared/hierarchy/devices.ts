import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { customFieldParam, type updateDevice as updateSchema } from './schemas.ts';
import { holdLiveSite } from './sites.ts';
import * as store from './store.ts';

export async function getDevice(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'devices:read');
  return assertReachable(await store.selectDevice(db, principal, id), 'Device');
}

/** Devices the principal reaches; `cf.<key>` parameters of the query filter by custom field values. */
export function listDevices(
  db: Db,
  principal: Principal,
  query: Page & { orgId?: string; siteId?: string; search?: string } & Record<string, unknown>,
) {
  requirePermission(principal, 'devices:read');
  const customFields: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    const key = customFieldParam.exec(name)?.[1];
    if (key && typeof value === 'string') customFields[key] = value;
  }
  return store.selectDevices(db, principal, { ...query, customFields }, query);
}

/** Renames a device or moves it to another live site of its own organization; audited as device.update. */
export async function updateDevice(
  db: Db,
  principal: Principal,
  id: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const device = await getDevice(db, principal, id);
  requirePermission(principal, 'devices:write');
  const updated = await db.transaction(async (tx) => {
    if (change.siteId) await holdLiveSite(tx, device.orgId, change.siteId);
    const row = assertReachable(await store.updateDeviceRow(tx, id, change), 'Device');
    await auditChange(tx, audit, {
      orgId: device.orgId,
      action: 'device.update',
      ...deviceResource(row),
      details: changedFields(device, row, ['displayName', 'siteId']),
    });
    return row;
  });
  return updated;
}

/** Soft delete: the device leaves every list and its agent can no longer authenticate; audited as device.delete. */
export async function deleteDevice(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const device = await getDevice(db, principal, id);
  requirePermission(principal, 'devices:write');
  await db.transaction(async (tx) => {
    await store.softDeleteDevice(tx, id);
    await auditChange(tx, audit, {
      orgId: device.orgId,
      action: 'device.delete',
      ...deviceResource(device),
      details: { siteId: device.siteId, agentId: device.agentId },
    });
  });
}

/** The audit resource fields of a device: its display name if it has one, else its hostname. */
export function deviceResource(device: { id: string; hostname: string; displayName?: string | null }) {
  return { resourceType: 'device', resourceId: device.id, resourceName: device.displayName ?? device.hostname };
}
