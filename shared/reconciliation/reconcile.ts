import type { z } from 'zod';
import { type AuditContext, writeRouteAudit } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { reachableOrganization } from '../hierarchy/organizations.ts';
import type { reconciledDevice, reconciliationUpload } from './schemas.ts';
import { type Counts, insertReconciliation, selectDevicesOf, selectHistory, selectOrgDevices } from './store.ts';

type Reconciled = z.output<typeof reconciledDevice>;

const hostKey = (hostname: string) => hostname.trim().toLowerCase();

/**
 * The states of an uploaded device list against the organization's enrolled devices (issue 18): `enrolled` when
 * exactly one device has the row's hostname (ignoring case) and no other row names it, `ambiguous` when several
 * devices or several rows share it, `missing` when none has it; devices no row names are `extra`. Devices carry no
 * serial number yet: matching by serial, then hostname, follows once they do (README "Moving a fleet in").
 */
export function reconcile(
  listed: z.output<typeof reconciliationUpload>['devices'],
  enrolled: readonly { id: string; hostname: string }[],
): { devices: Reconciled[]; counts: Counts } {
  const byHost = new Map<string, string[]>();
  for (const device of enrolled)
    byHost.set(hostKey(device.hostname), [...(byHost.get(hostKey(device.hostname)) ?? []), device.id]);
  const rowsPerHost = new Map<string, number>();
  for (const row of listed) rowsPerHost.set(hostKey(row.hostname), (rowsPerHost.get(hostKey(row.hostname)) ?? 0) + 1);
  const devices: Reconciled[] = listed.map((row) => {
    const candidates = byHost.get(hostKey(row.hostname)) ?? [];
    const base = {
      hostname: row.hostname,
      serial: row.serial ?? null,
      externalId: row.externalId ?? null,
      organization: row.organization ?? null,
    };
    if (candidates.length === 0) return { ...base, state: 'missing', deviceId: null, candidates: [] };
    if (candidates.length > 1 || rowsPerHost.get(hostKey(row.hostname))! > 1)
      return { ...base, state: 'ambiguous', deviceId: null, candidates };
    return { ...base, state: 'enrolled', deviceId: candidates[0]!, candidates: [] };
  });
  for (const device of enrolled)
    if (!rowsPerHost.has(hostKey(device.hostname)))
      devices.push({
        state: 'extra',
        hostname: device.hostname,
        serial: null,
        externalId: null,
        organization: null,
        deviceId: device.id,
        candidates: [],
      });
  const counts: Counts = { enrolled: 0, missing: 0, extra: 0, ambiguous: 0 };
  for (const device of devices) counts[device.state] += 1;
  return { devices, counts };
}

/** POST …/reconciliation: reconciles and keeps the upload; audited with its counts. */
export async function uploadReconciliation(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof reconciliationUpload>,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'enrollment:manage');
  const { devices, counts } = reconcile(input.devices, await selectOrgDevices(db, orgId));
  const stored = await insertReconciliation(db, {
    orgId,
    createdBy: principal.id,
    rows: input.devices.length,
    counts,
    devices,
  });
  writeRouteAudit(audit, {
    orgId,
    action: 'organization.reconciliation.upload',
    resourceType: 'organization',
    resourceId: orgId,
    resourceName: org.name,
    details: { reconciliationId: stored.id, rows: input.devices.length, ...counts },
  });
  return {
    id: stored.id,
    orgId,
    createdAt: stored.createdAt.toISOString(),
    rows: input.devices.length,
    counts,
    devices,
  };
}

/** GET …/reconciliation: the latest upload's states and every upload's counts over time. */
export async function reconciliationProgress(db: Db, principal: Principal, orgId: string) {
  await reachableOrganization(db, principal, orgId, 'devices:read');
  const history = (await selectHistory(db, orgId)).map((h) => ({
    ...h,
    createdAt: new Date(h.createdAt).toISOString(),
  }));
  const last = history.at(-1);
  if (!last) return { latest: null, history };
  const stored = await selectDevicesOf(db, last.id);
  return {
    latest: {
      id: last.id,
      orgId,
      createdAt: last.createdAt,
      rows: last.rows,
      counts: last.counts,
      devices: stored!.devices as Reconciled[],
    },
    history,
  };
}
