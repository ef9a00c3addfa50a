import { Temporal } from 'temporal-polyfill';
import { changedFields } from '../audit/changes.ts';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { assertOwnerEditable, type OwnedKind, writableOwner } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import { InvalidState, NotFound, ValidationFailed } from '../errors.ts';
import { armAt } from '../schedules/arm.ts';
import { nextOccurrence, occurrenceInProgress, occurrencesBetween } from '../schedules/engine.ts';
import { compileOrRefuse } from '../schedules/preview.ts';
import type { Misfire } from '../schedules/schemas.ts';
import { armWindow, auditLifecycle, compileWindow, endActive, type OnWindowEnd } from './lifecycle.ts';
import type { CreateWindow, ListQuery, Targets, UpdateWindow } from './schemas.ts';
import * as store from './store.ts';

const defaultMisfire: Misfire = { policy: 'run-once-late', graceMinutes: 60 };
const scheduleFields = {
  rrule: 'body.schedule.rrule',
  start: 'body.schedule.start',
  timezone: 'body.schedule.timezone',
  exdates: 'body.schedule.exdates',
} as const;

/** A window as answered: without its version, with its next occurrence. */
function reply(row: store.WindowRow, now = new Date()) {
  const { version: _, active, ...window } = row;
  const next = nextOccurrence(compileWindow(row), now);
  return {
    ...window,
    // Times kept inside jsonb read back as text with an offset: answered as instants like every other time.
    active: active && { ...active, from: new Date(active.from), until: new Date(active.until) },
    nextOccurrence: next ? { key: next.key, local: next.local, utc: next.utc } : null,
  };
}

const windows: OwnedKind = { permission: 'devices:write', one: 'maintenance window', many: 'maintenance windows' };

/** Every target is the owner's: another tenant's id reads as unknown (400 naming the list). */
async function assertTargets(db: Db, windowOwner: store.Owner, targets: Targets): Promise<void> {
  for (const kind of ['orgIds', 'siteIds', 'groupIds', 'deviceIds'] as const) {
    const unknown = await store.selectUnknownTargets(db, windowOwner, kind, targets[kind] ?? []);
    if (unknown.length > 0)
      throw ValidationFailed(`Unknown target ${unknown[0]}`, [
        { path: `body.targets.${kind}`, message: `Unknown target ${unknown[0]}`, code: 'custom' },
      ]);
  }
}

/** The schedule as stored, checked by the engine (400 naming the field); the zone defaults to the sites'. */
async function storedSchedule(
  db: Db,
  windowOwner: store.Owner,
  schedule: CreateWindow['schedule'],
  targets: Targets,
): Promise<store.WindowSchedule> {
  const timezone =
    schedule.timezone ?? (await store.selectDefaultZone(db, windowOwner, targets.siteIds ?? [])) ?? 'UTC';
  const stored = {
    rrule: schedule.rrule ?? null,
    start: schedule.start.length === 16 ? `${schedule.start}:00` : schedule.start,
    timezone,
    durationMinutes: schedule.durationMinutes,
    exdates: schedule.exdates ?? [],
    misfire: schedule.misfire ?? defaultMisfire,
  };
  stored.timezone = compileOrRefuse(stored, scheduleFields).zone;
  return stored;
}

const audited = (
  tx: Tx,
  audit: AuditContext,
  row: store.WindowRow,
  action: string,
  details: Record<string, unknown>,
) => {
  const event = { action, resourceType: 'maintenance_window', resourceId: row.id, resourceName: row.name, details };
  return auditOwnedChange(tx, audit, row, event);
};

const describe = (row: store.WindowRow) => ({
  schedule: row.schedule,
  targets: row.targets,
  suppress: row.suppress,
  allowSeverity: row.allowSeverity,
});

export async function createWindow(db: Db, principal: Principal, input: CreateWindow, audit: AuditContext) {
  const windowOwner = await writableOwner(db, principal, input, windows);
  await assertTargets(db, windowOwner, input.targets);
  const schedule = await storedSchedule(db, windowOwner, input.schedule, input.targets);
  const row = await db.transaction(async (tx) => {
    const created = await store.insertWindow(tx, windowOwner, {
      name: input.name,
      schedule,
      targets: input.targets,
      suppress: input.suppress,
      allowSeverity: input.allowSeverity ?? null,
    });
    await audited(tx, audit, created, 'maintenance.create', { after: describe(created) });
    return created;
  });
  await armWindow(db, row.id);
  return reply((await store.selectLiveWindow(db, row.id)) ?? row);
}

export function listWindows(db: Db, principal: Principal, query: ListQuery) {
  requirePermission(principal, 'devices:read');
  return store
    .selectWindows(db, principal, query.orgId, query)
    .then((page) => ({ ...page, data: page.data.map((row) => reply(row)) }));
}

async function reachable(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'devices:read');
  return assertReachable(await store.selectWindow(db, principal, id), 'Maintenance window');
}

export async function getWindow(db: Db, principal: Principal, id: string) {
  return reply(await reachable(db, principal, id));
}

/**
 * A change bumps the window's version (jobs armed before find it moved). An occurrence in progress by the schedule
 * keeps going with its new end when the new schedule still has it in progress, and ends now otherwise.
 */
export async function updateWindow(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateWindow,
  audit: AuditContext,
  onEnd: OnWindowEnd,
) {
  const before = await reachable(db, principal, id);
  assertOwnerEditable(principal, before, windows);
  const windowOwner = { partnerId: before.partnerId, orgId: before.orgId };
  if (change.targets) await assertTargets(db, windowOwner, change.targets);
  const schedule = change.schedule
    ? await storedSchedule(db, windowOwner, change.schedule, change.targets ?? before.targets)
    : undefined;
  const row = await db.transaction(async (tx) => {
    const updated = await store.updateWindowRow(tx, id, { ...change, schedule });
    await audited(
      tx,
      audit,
      updated,
      'maintenance.update',
      changedFields(describe(before), describe(updated), ['schedule', 'targets', 'suppress', 'allowSeverity']),
    );
    return updated;
  });
  const now = new Date();
  if (row.active && !row.active.manual) {
    const current = occurrenceInProgress(compileWindow(row), now, row.schedule.durationMinutes);
    if (current?.key === row.active.occurrenceKey) {
      const until = current.at.getTime() + row.schedule.durationMinutes * 60_000;
      await db.transaction((tx) =>
        store.setActive(tx, id, { key: current.key, from: current.at, until: new Date(until), manual: false }),
      );
      await armAt({ kind: 'maintenance.end', windowId: id, key: current.key, until }, new Date(until));
    } else if (await endActive(db, id, audit, (active) => !active.manual)) await onEnd(id);
  }
  await armWindow(db, id, now);
  return reply((await store.selectLiveWindow(db, id))!);
}

/** Soft delete; an occurrence in progress ends with it, and what it held back is told. */
export async function deleteWindow(db: Db, principal: Principal, id: string, audit: AuditContext, onEnd: OnWindowEnd) {
  const row = await reachable(db, principal, id);
  assertOwnerEditable(principal, row, windows);
  await db.transaction(async (tx) => {
    await store.softDeleteWindow(tx, id);
    await audited(tx, audit, row, 'maintenance.delete', { before: describe(row), wasActive: row.active !== null });
  });
  if (row.active) await onEnd(id);
}

/** "Maintenance now for N minutes": the window's occurrence in progress from now, by hand (409 while one is). */
export async function startWindowNow(db: Db, principal: Principal, id: string, minutes: number, audit: AuditContext) {
  const row = await reachable(db, principal, id);
  assertOwnerEditable(principal, row, windows);
  const from = new Date();
  const until = new Date(from.getTime() + minutes * 60_000);
  const key = Temporal.Instant.fromEpochMilliseconds(from.getTime())
    .toZonedDateTimeISO(row.schedule.timezone)
    .toPlainDateTime()
    .toString({ smallestUnit: 'second' });
  await db.transaction(async (tx) => {
    const locked = await store.selectLiveWindow(tx, id, true);
    if (!locked) throw NotFound('Maintenance window');
    if (locked.active)
      throw InvalidState(`The window is in progress until ${new Date(locked.active.until).toISOString()}`);
    await store.setActive(tx, id, { key, from, until, manual: true });
    await auditLifecycle(tx, audit, locked, 'maintenance.start', {
      occurrenceKey: key,
      from: from.toISOString(),
      until: until.toISOString(),
      manual: true,
    });
  });
  await armAt({ kind: 'maintenance.end', windowId: id, key, until: until.getTime() }, until);
  return reply((await store.selectLiveWindow(db, id))!);
}

/** Ends the occurrence in progress now (409 when none is); what it held back is told, the next start armed. */
export async function endWindowNow(db: Db, principal: Principal, id: string, audit: AuditContext, onEnd: OnWindowEnd) {
  const row = await reachable(db, principal, id);
  assertOwnerEditable(principal, row, windows);
  const ended = await endActive(db, id, audit, () => true);
  if (!ended) throw InvalidState('The window is not in progress');
  await onEnd(id);
  await armWindow(db, id);
  return reply((await store.selectLiveWindow(db, id))!);
}

/** GET /maintenance-windows/{id}/occurrences: occurrences in [from, to) in local time and UTC. */
export async function listOccurrences(
  db: Db,
  principal: Principal,
  id: string,
  query: { from?: string; to?: string; limit: number },
) {
  const row = await reachable(db, principal, id);
  const from = query.from ? new Date(query.from) : new Date();
  const to = query.to ? new Date(query.to) : new Date(from.getTime() + 90 * 86_400_000);
  if (to <= from)
    throw ValidationFailed('to must be after from', [
      { path: 'query.to', message: 'to must be after from', code: 'custom' },
    ]);
  const occurrences = occurrencesBetween(compileWindow(row), from, to, query.limit);
  return {
    windowId: row.id,
    timezone: row.schedule.timezone,
    durationMinutes: row.schedule.durationMinutes,
    occurrences: occurrences.map(({ key, local, utc }) => ({ key, local, utc })),
  };
}

/** GET /devices/{id}/maintenance: the windows in progress covering the device, and until when. */
export async function deviceMaintenance(db: Db, principal: Principal, deviceId: string) {
  requirePermission(principal, 'devices:read');
  const device = await store.selectDeviceOrg(db, principal, deviceId);
  if (!device) throw NotFound('Device');
  const windows = await store.selectDeviceWindows(db, { orgId: device.orgId, deviceId });
  const until = windows.reduce<Date | null>((last, w) => (last && last > w.until ? last : w.until), null);
  return { deviceId, inMaintenance: windows.length > 0, until, windows };
}
