import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import type { updateDevice as updateSchema } from './schemas.ts';
import { holdLiveSite } from './sites.ts';
import * as store from './store.ts';

export async function getDevice(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'devices:read');
  return assertReachable(await store.findDevice(db, principal, id), 'Device');
}

export function listDevices(db: Db, principal: Principal, query: Page & { orgId?: string; siteId?: string; search?: string }) {
  requirePermission(principal, 'devices:read');
  return store.listDevices(db, principal, query, query);
}

/** Renames a device or moves it to another live site of its own organization. */
export async function updateDevice(db: Db, principal: Principal, id: string, change: z.output<typeof updateSchema>) {
  const device = await getDevice(db, principal, id);
  requirePermission(principal, 'devices:write');
  return db.transaction(async (tx) => {
    if (change.siteId) await holdLiveSite(tx, device.orgId as string, change.siteId);
    return assertReachable(await store.updateDevice(tx, id, change), 'Device');
  });
}

/** Soft delete: the device leaves every list and its agent can no longer authenticate. */
export async function deleteDevice(db: Db, principal: Principal, id: string) {
  await getDevice(db, principal, id);
  requirePermission(principal, 'devices:write');
  await db.transaction((tx) => store.softDeleteDevice(tx, id));
}
