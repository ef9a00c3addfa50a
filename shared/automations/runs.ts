import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { memberDeviceIds } from '../device-groups/groups.ts';
import { DomainError, InvalidState, NotFound, ValidationFailed } from '../errors.ts';
import { nextOccurrence, occurrencesBetween } from '../schedules/engine.ts';
import { reachableAutomation } from './automations.ts';
import { decide, fire } from './fire.ts';
import { compileTrigger, scheduleZones } from './schedule.ts';
import type { TargetBody } from './schemas.ts';
import { devicesInScope, policyOrigin } from './scope.ts';
import * as store from './store.ts';
import { actorOf, publicAction } from './stored.ts';

const invalid = (path: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${path}`, message, code: 'custom' }]);

/** At most this many devices by name or group in one manual run or dry run. */
const maxTargets = 1000;

/**
 * The devices a manual run or dry run targets: named ones (each reachable by the caller, else 404; each in the
 * automation's scope, else 400), a group's members, or every device in scope; conditions apply to all of them.
 */
async function targets(db: Db, principal: Principal, automation: store.AutomationRow, body: TargetBody) {
  const named = body.groupId
    ? await memberDeviceIds(db, principal, body.groupId, maxTargets, 'body.groupId')
    : body.deviceIds;
  if (!named) return devicesInScope(db, automation);
  if (body.deviceIds) {
    const reached = await store.selectReachableDevices(db, principal, named);
    const found = new Set(reached.map((d) => d.id));
    const missing = named.filter((id) => !found.has(id));
    if (missing.length > 0) throw new DomainError('NOT_FOUND', 'Device not found', { deviceIds: missing });
    const inScope = new Set(
      (await devicesInScope(db, automation, { deviceIds: named, conditions: false })).map((d) => d.id),
    );
    const outside = named.find((id) => !inScope.has(id));
    if (outside) throw invalid('deviceIds', `Device ${outside} is outside the automation's scope`);
  }
  return named.length === 0 ? [] : devicesInScope(db, automation, { deviceIds: named });
}

/**
 * POST /automations/{id}/run: a manual run, keyed by the request's Idempotency-Key (a retry runs nothing twice),
 * on the devices named, a group's members, or every device in scope. Not counted by the loop guard.
 */
export async function runNow(
  db: Db,
  principal: Principal,
  id: string,
  body: TargetBody,
  audit: AuditContext,
  idempotencyKey: string | undefined,
) {
  requirePermission(principal, 'scripts:run');
  const automation = await reachableAutomation(db, principal, id);
  requirePermission(principal, 'scripts:run');
  if (!automation.enabled) throw InvalidState('The automation is disabled');
  const devices = await targets(db, principal, automation, body);
  const occurrenceKey = `manual:${idempotencyKey ?? crypto.randomUUID()}`;
  const fired = await fire(db, {
    automation,
    trigger: { type: 'manual', occurrenceKey },
    guarded: false,
    devices,
    audit,
    startedBy: actorOf(principal),
  });
  return startedReply(id, occurrenceKey, fired.duplicate, await runViews(db, fired.runIds, true));
}

/** What a firing answers: its first run at the top, and all of them. */
export const startedReply = <R extends { id: string }>(
  automationId: string,
  occurrenceKey: string,
  duplicate: boolean,
  runs: R[],
) => ({ ...runs[0], automationId, occurrenceKey, duplicate, runs });

type ItemStatus = 'running' | 'completed' | 'failed' | 'skipped' | 'queued';

/** An item as it stands now: its actions with the state of the script run items they started. */
function itemView(item: store.ItemRow) {
  const scripts = new Map(item.scripts.map((s) => [s.actionIndex, s]));
  // A run-script action's outcome is its link to the script run item it started, unless an outcome is stored.
  const stored = new Set(item.actions.map((action) => action.index));
  const linked: store.ActionOutcome[] = item.scripts
    .filter((s) => !stored.has(s.actionIndex))
    .map((s) => ({
      index: s.actionIndex,
      type: 'run-script',
      status: 'dispatched',
      scriptRunId: s.scriptRunId,
      scriptRunItemId: s.scriptRunItemId,
    }));
  const outcomes = [...item.actions, ...linked].sort((a, b) => a.index - b.index);
  const actions = outcomes.map((action) => {
    const script = scripts.get(action.index);
    if (!script) return action;
    const status: 'running' | 'dispatched' | 'completed' | 'failed' =
      script.status === 'running'
        ? 'running'
        : script.status === 'pending' || script.status === 'sent'
          ? 'dispatched'
          : script.status === 'completed' && script.exitCode === 0
            ? 'completed'
            : 'failed';
    return { ...action, status, exitCode: script.exitCode, durationMs: script.durationMs, output: script.output };
  });
  let status: ItemStatus = item.status;
  if (item.status === 'completed' || item.status === 'failed') {
    if (actions.some((a) => a.status === 'failed')) status = 'failed';
    else if (actions.some((a) => a.status === 'dispatched' || a.status === 'running')) status = 'running';
  }
  const durations = actions.map((a) => ('durationMs' in a ? a.durationMs : null)).filter((d) => d != null);
  return {
    id: item.id,
    deviceId: item.deviceId,
    hostname: item.hostname,
    orgId: item.orgId,
    status,
    skipReason: item.skipReason,
    maintenanceWindowId: item.maintenanceWindowId,
    actions,
    scriptRunId: actions.find((a) => a.scriptRunId)?.scriptRunId ?? null,
    scriptRunItemId: actions.find((a) => a.scriptRunItemId)?.scriptRunItemId ?? null,
    durationMs: durations.length > 0 ? durations.reduce((a, b) => a + b, 0) : null,
    createdAt: item.createdAt,
  };
}

function runStatus(items: { status: ItemStatus }[]) {
  if (items.length === 0) return 'empty' as const;
  const has = (status: ItemStatus) => items.some((i) => i.status === status);
  if (has('running') || has('queued')) return 'running' as const;
  if (items.every((i) => i.status === 'skipped')) return 'skipped' as const;
  if (has('failed')) return has('completed') ? ('partial' as const) : ('failed' as const);
  return 'completed' as const;
}

export async function runViews(db: Db, runIds: string[], withItems: boolean, rows?: store.RunRow[]) {
  const runs =
    rows ?? (await Promise.all(runIds.map((id) => store.selectRunById(db, id)))).filter((r) => r !== undefined);
  const items = (
    await store.selectItems(
      db,
      runs.map((r) => r.id),
    )
  ).map((item) => ({ runId: item.runId, ...itemView(item) }));
  return runs.map((run) => {
    const own = items.filter((i) => i.runId === run.id).map(({ runId: _, ...item }) => item);
    const counts = { running: 0, completed: 0, failed: 0, skipped: 0, queued: 0 };
    for (const item of own) counts[item.status] += 1;
    return {
      ...run,
      status: runStatus(own),
      counts,
      ...(withItems ? { items: own } : {}),
    };
  });
}

export async function listRuns(db: Db, principal: Principal, id: string, page: Page) {
  await reachableAutomation(db, principal, id);
  const runs = await store.selectRuns(db, principal, id, page);
  return { ...runs, data: await runViews(db, [], false, runs.data) };
}

export async function getRun(db: Db, principal: Principal, runId: string) {
  requirePermission(principal, 'scripts:read');
  const run = assertReachable(await store.selectRun(db, principal, runId), 'Automation run');
  const [view] = await runViews(db, [], true, [run]);
  return view!;
}

/**
 * POST /automations/{id}/dry-run: which devices would run which actions now (the guards read, nothing written), and
 * the next occurrence of each schedule in the zones of those devices.
 */
export async function dryRun(db: Db, principal: Principal, id: string, body: TargetBody) {
  const automation = await reachableAutomation(db, principal, id);
  requirePermission(principal, 'scripts:run');
  const devices = await targets(db, principal, automation, body);
  const decisions = await decide(db, automation, devices, true);
  const now = new Date();
  const zones = new Set(devices.map((d) => d.timezone));
  const nextOccurrences = (await scheduleZones(db, automation))
    .filter((each) => !each.deviceLocal || zones.has(each.zone))
    .map((each) => {
      const next = nextOccurrence(compileTrigger(each.trigger, each.zone), now);
      return {
        trigger: each.index,
        timezone: each.zone,
        occurrence: next ? { key: next.key, local: next.local, utc: next.utc } : null,
      };
    });
  const actions = automation.actions.map(publicAction);
  return {
    automationId: id,
    at: now,
    nextOccurrences,
    devices: devices.map((device) => {
      const decision = decisions.get(device.id)!;
      return {
        deviceId: device.id,
        hostname: device.hostname,
        orgId: device.orgId,
        timezone: device.timezone,
        wouldRun: decision.status === 'run',
        skipReason: decision.skipReason,
        maintenanceWindowId: decision.maintenanceWindowId,
        actions: decision.status === 'run' ? actions : [],
      };
    }),
  };
}

/** GET /automations/{id}/occurrences: per schedule trigger, one list per zone it runs in (device-local: its devices'). */
export async function listOccurrences(
  db: Db,
  principal: Principal,
  id: string,
  query: { from?: string; to?: string; limit: number },
) {
  const automation = await reachableAutomation(db, principal, id);
  const from = query.from ? new Date(query.from) : new Date();
  const to = query.to ? new Date(query.to) : new Date(from.getTime() + 90 * 86_400_000);
  if (to <= from)
    throw ValidationFailed('to must be after from', [
      { path: 'query.to', message: 'to must be after from', code: 'custom' },
    ]);
  const schedules = (await scheduleZones(db, automation)).map((each) => ({
    trigger: each.index,
    timezone: each.zone,
    deviceLocal: each.deviceLocal,
    deviceCount: each.deviceCount,
    occurrences: occurrencesBetween(compileTrigger(each.trigger, each.zone), from, to, query.limit).map(
      ({ key, local, utc }) => ({ key, local, utc }),
    ),
  }));
  return { automationId: id, schedules };
}

/**
 * GET /devices/{id}/automations: the automations that apply to the device (its organization's own, and its partner's
 * that a policy of kind automation brings, with that policy's origin through the one resolver) and the next
 * occurrence of each in the device's local time.
 */
export async function deviceAutomations(db: Db, principal: Principal, deviceId: string) {
  requirePermission(principal, 'devices:read');
  const [device] = await store.selectReachableDevices(db, principal, [deviceId]);
  if (!device) throw NotFound('Device');
  requirePermission(principal, 'scripts:read');
  const zone = device.timezone;
  const now = new Date();
  const automations = [];
  for (const automation of await store.selectOwnerAutomations(db, {
    orgId: device.orgId,
    partnerId: device.partnerId,
  })) {
    const origin = automation.orgId
      ? { type: 'organization', orgId: automation.orgId }
      : await policyOrigin(db, deviceId, automation.id).then((o) => o && { type: 'policy', ...o });
    if (!origin) continue;
    let next: { key: string; local: string; utc: string; timezone: string } | null = null;
    for (const trigger of automation.triggers) {
      if (trigger.type !== 'schedule' || !automation.enabled) continue;
      const tz = trigger.schedule.timezone ?? zone;
      const found = nextOccurrence(compileTrigger(trigger, tz), now);
      if (found && (!next || found.utc < next.utc))
        next = { key: found.key, local: found.local, utc: found.utc, timezone: tz };
    }
    automations.push({
      id: automation.id,
      name: automation.name,
      enabled: automation.enabled,
      availability: automation.availability,
      origin,
      triggers: automation.triggers.map((t) => (t.type === 'event' ? `event:${t.event}` : t.type)),
      nextOccurrence: next,
    });
  }
  return { deviceId, timezone: zone, automations };
}
