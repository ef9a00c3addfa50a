import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { customFieldsOfDevices } from '../custom-fields/values.ts';
import type { Db } from '../db/db.ts';
import { compileFilter, filterParams } from './filter.ts';
import { groupsRead } from './groups.ts';
import type { deviceSummaries, summariesBody } from './schemas.ts';
import * as store from './store.ts';

/**
 * What a devices list shows beside each device of a page, for up to 100 devices of one organization in three
 * statements whatever their number: open alerts (null without alerts:read), groups (static and dynamic: every
 * dynamic filter of the organization compiled into one CASE, as for one device) and custom fields. Ids that are no
 * live device of the organization are left out, never named.
 */
export async function summarizeDevices(
  db: Db,
  principal: Principal,
  orgId: string,
  body: z.output<typeof summariesBody>,
): Promise<z.input<typeof deviceSummaries>> {
  const [org, filters] = await Promise.all([
    reachableOrganization(db, principal, orgId, groupsRead),
    store.selectDynamicFiltersOfOrganization(db, orgId),
  ]);
  const { params, bind } = filterParams();
  const cases = filters.map((group) => `WHEN ${bind(group.id, 'uuid')} THEN ${compileFilter(group.filter, bind)}`);
  const sql = cases.length > 0 ? `CASE g.id ${cases.join(' ')} ELSE false END` : 'false';
  const rows = await store.selectDeviceSummaries(db, orgId, [...new Set(body.deviceIds)], { sql, params });
  const fields = await customFieldsOfDevices(
    db,
    { partnerId: org.partnerId, orgId },
    rows.map((row) => ({ id: row.deviceId, osType: row.osType })),
  );
  const alerts = principal.permissions.has('alerts:read');
  const order = new Map(body.deviceIds.map((id, index) => [id, index]));
  return {
    data: rows
      .sort((a, b) => order.get(a.deviceId)! - order.get(b.deviceId)!)
      .map((row) => ({
        deviceId: row.deviceId,
        openAlerts: alerts ? row.openAlerts : null,
        groups: row.groups,
        customFields: fields.get(row.deviceId) ?? {},
      })),
  };
}
