import type { Db } from '../db/db.ts';
import { addDays, billableDays, countDays, daysBetween, overlapDays, type Period } from './periods.ts';
import type { DeviceRole, StatementDevice, UsageStatement } from './schemas.ts';
import * as store from './store.ts';

/**
 * A device's role: the one its agent reports (the policies narrow by the same), else, for an agent that reports none,
 * a server when its operating system names a server edition (`Windows Server 2022`, `Ubuntu Server`), otherwise a
 * workstation.
 */
export function deviceRole(device: {
  role?: DeviceRole | null;
  osType: string | null;
  osVersion: string | null;
}): DeviceRole {
  if (device.role) return device.role;
  return /server/i.test(`${device.osType ?? ''} ${device.osVersion ?? ''}`) ? 'server' : 'workstation';
}

const never = '9999-12-31';

/**
 * The usage statement of a contract's period: every device of the organization enrolled at some moment of a billable
 * day, with the days it counted. A device counts on a day (in the billing time zone) from the day it was enrolled
 * through the day it was deleted; a live device counts through the period's end (a draft of the current period
 * assumes it stays). The organization's audit chain head is read first, so every device.create and device.delete row
 * the statement names lies at or below it.
 */
export async function usageStatement(
  db: Db,
  contract: store.ContractRow,
  period: Period,
  pauses: store.PauseRow[],
  invoiceId: string | null = null,
): Promise<UsageStatement> {
  const ranges = billableDays(period, contract, pauses);
  const usage = await store.selectUsageRows(db, contract.orgId, contract.timezone, period.start, period.end);
  const devices: StatementDevice[] = usage.devices.map((row) => {
    const until = row.deletedDay ? addDays(row.deletedDay, 1) : never;
    const counted = ranges
      .map((r) => ({ from: r.from > row.enrolledDay ? r.from : row.enrolledDay, to: r.to < until ? r.to : until }))
      .filter((r) => r.from < r.to);
    return {
      deviceId: row.deviceId,
      hostname: row.hostname,
      siteId: row.siteId,
      osType: row.osType,
      role: deviceRole(row),
      enrolledAt: row.enrolledAt,
      deletedAt: row.deletedAt,
      firstDay: counted[0]?.from ?? null,
      lastDay: counted.length > 0 ? addDays(counted[counted.length - 1]!.to, -1) : null,
      days: overlapDays(ranges, row.enrolledDay, until),
      createSeq: row.createSeq,
      deleteSeq: row.deleteSeq,
    };
  });
  const chainHead = usage.head;
  return {
    invoiceId,
    contractId: contract.id,
    orgId: contract.orgId,
    periodStart: period.start,
    periodEnd: addDays(period.end, -1),
    timezone: contract.timezone,
    periodDays: daysBetween(period.start, period.end),
    billableDays: countDays(ranges),
    billableRanges: ranges.map((r) => ({ from: r.from, to: addDays(r.to, -1) })),
    deviceDays: devices.reduce((sum, d) => sum + d.days, 0),
    devices,
    chainHead: chainHead ? { seq: chainHead.seq, checksum: chainHead.checksum } : null,
    generatedAt: new Date().toISOString(),
  };
}
