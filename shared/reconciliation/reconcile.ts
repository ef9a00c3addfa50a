import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { reportedSerial } from '../hierarchy/serial-number.ts';
import type { reconciledDevice, reconciliationUpload } from './schemas.ts';
import {
  type Counts,
  type EnrolledDevice,
  insertReconciliation,
  selectDevicesOf,
  selectHistory,
  selectOrgDevices,
} from './store.ts';

type Reconciled = z.output<typeof reconciledDevice>;

const hostKey = (hostname: string) => hostname.trim().toLowerCase();
/** A serial that identifies a machine (placeholders never do), compared ignoring case. */
const serialKey = (serial: string | null | undefined) => reportedSerial(serial)?.toLowerCase() ?? null;

/** Ids per key, and how many listed rows name each key. */
function tally<T>(items: readonly T[], key: (item: T) => string | null): Map<string, T[]> {
  const byKey = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    if (k !== null) byKey.set(k, [...(byKey.get(k) ?? []), item]);
  }
  return byKey;
}

/**
 * The states of an uploaded device list against the organization's enrolled devices, matched by serial
 * number, then by hostname (ignoring case): `enrolled` when exactly one device matches and no other row names the
 * same serial or hostname, `ambiguous` when several devices or rows share it (never guessed), `missing` when none
 * matches; devices no row matches are `extra`. A placeholder serial ("To be filled by O.E.M.") matches nothing.
 */
export function reconcile(
  listed: z.output<typeof reconciliationUpload>['devices'],
  enrolled: readonly EnrolledDevice[],
): { devices: Reconciled[]; counts: Counts } {
  const devicesBySerial = tally(enrolled, (device) => serialKey(device.serialNumber));
  const devicesByHost = tally(enrolled, (device) => hostKey(device.hostname));
  const rowsBySerial = tally(listed, (row) => serialKey(row.serial));
  const rowsByHost = tally(listed, (row) => hostKey(row.hostname));
  const named = new Set<string>();
  const devices: Reconciled[] = listed.map((row) => {
    const base = {
      hostname: row.hostname,
      serial: row.serial ?? null,
      externalId: row.externalId ?? null,
      organization: row.organization ?? null,
    };
    const serial = serialKey(row.serial);
    const bySerial = serial === null ? [] : (devicesBySerial.get(serial) ?? []);
    const [matches, rowsSharing] =
      bySerial.length > 0
        ? [bySerial, rowsBySerial.get(serial!)!.length]
        : [devicesByHost.get(hostKey(row.hostname)) ?? [], rowsByHost.get(hostKey(row.hostname))!.length];
    const ids = matches.map((device) => device.id);
    for (const id of ids) named.add(id);
    if (ids.length === 0) return { ...base, state: 'missing', deviceId: null, candidates: [] };
    if (ids.length > 1 || rowsSharing > 1) return { ...base, state: 'ambiguous', deviceId: null, candidates: ids };
    return { ...base, state: 'enrolled', deviceId: ids[0]!, candidates: [] };
  });
  for (const device of enrolled)
    if (!named.has(device.id))
      devices.push({
        state: 'extra',
        hostname: device.hostname,
        serial: device.serialNumber,
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
  const stored = await db.transaction(async (tx) => {
    const inserted = await insertReconciliation(tx, {
      orgId,
      createdBy: principal.id,
      rows: input.devices.length,
      counts,
      devices,
    });
    await auditChange(tx, audit, {
      orgId,
      action: 'organization.reconciliation.upload',
      resourceType: 'organization',
      resourceId: orgId,
      resourceName: org.name,
      details: { reconciliationId: inserted.id, rows: input.devices.length, ...counts },
    });
    return inserted;
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
