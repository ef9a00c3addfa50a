/**
 * A firing of an automation: one run per organization of the devices it fires on, keyed by the occurrence (a
 * duplicate delivery of the trigger finds the run there and runs nothing), each device's item decided by the guards
 * (a maintenance window suppressing automations, the loop guard, concurrency) and its actions run in order.
 */
import { raiseAlert } from '../alerts/raise.ts';
import { type AuditContext, flushAudit } from '../audit/writer.ts';
import { setSystemValue } from '../custom-fields/values.ts';
import type { Db } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { changeMemberBySystem } from '../device-groups/groups.ts';
import { logger } from '../logger.ts';
import { suppressingWindows } from '../maintenance/store.ts';
import { tellAutomation } from '../notifications/send.ts';
import { armAt } from '../schedules/arm.ts';
import { dispatchRun } from '../scripts/dispatch.ts';
import { resolveParameters } from '../scripts/parameters.ts';
import { pendingHours } from '../scripts/runs.ts';
import { openParameters, type StoredParameter } from '../scripts/secret-defaults.ts';
import { insertRun as insertScriptRun } from '../scripts/store.ts';
import * as store from './store.ts';
import { actionParameters, auditRuns } from './stored.ts';

export type SkipReason = 'loop-guard' | 'concurrency' | 'maintenance';

export interface Decision {
  status: 'run' | 'skipped' | 'queued';
  skipReason: SkipReason | null;
  maintenanceWindowId: string | null;
  /** For a queued item: when the run it waits for ends at the latest. */
  until?: Date | null;
}

/** The guards' decision for each device, read without writing (a dry run asks the same). */
export async function decide(
  db: Db,
  automation: store.AutomationRow,
  devices: store.ScopeDevice[],
  guarded: boolean,
): Promise<Map<string, Decision>> {
  const ids = devices.map((d) => d.id);
  const { guards } = automation;
  const [counts, busy] = await Promise.all([
    guarded ? store.countGuardedRuns(db, automation.id, ids, guards.windowMinutes) : new Map<string, number>(),
    store.selectBusyDevices(db, automation.id, ids),
  ]);
  // A window suppressing automations holds the device back; one suppressing scripts, an automation that runs one.
  const runsScripts = automation.actions.some((action) => action.type === 'run-script');
  const held = guards.respectMaintenance
    ? await suppressingWindows(
        db,
        devices.map((d) => ({ orgId: d.orgId, deviceId: d.id })),
        runsScripts ? ['automations', 'scripts'] : ['automations'],
      )
    : new Map<string, string>();
  const decisions = new Map<string, Decision>();
  for (const device of devices) {
    const windowId = held.get(device.id);
    if (windowId) {
      decisions.set(device.id, { status: 'skipped', skipReason: 'maintenance', maintenanceWindowId: windowId });
      continue;
    }
    if (guarded && (counts.get(device.id) ?? 0) >= guards.maxRunsPerDevice) {
      decisions.set(device.id, { status: 'skipped', skipReason: 'loop-guard', maintenanceWindowId: null });
      continue;
    }
    if (busy.has(device.id)) {
      decisions.set(device.id, {
        status: guards.concurrency === 'queue' ? 'queued' : 'skipped',
        skipReason: 'concurrency',
        maintenanceWindowId: null,
        until: busy.get(device.id),
      });
      continue;
    }
    decisions.set(device.id, { status: 'run', skipReason: null, maintenanceWindowId: null });
  }
  return decisions;
}

/** One occurrence of a firing: its run key and trigger, and the devices it fires on. */
export interface Occurrence {
  trigger: store.RunTrigger;
  devices: store.ScopeDevice[];
}

export interface Firing {
  automation: store.AutomationRow;
  /** Counted by the loop guard: every trigger but a manual run. */
  guarded: boolean;
  /** Who the run's audit row and script runs name: the caller of a manual run, else the system for the author. */
  audit: AuditContext;
  startedBy: store.Actor;
}

/** Fires one occurrence: answers the runs created (none when the occurrence had run already: a duplicate). */
export async function fire(db: Db, firing: Firing & Occurrence): Promise<{ duplicate: boolean; runIds: string[] }> {
  const { trigger, devices, ...rest } = firing;
  const { runIds, duplicates } = await fireAll(db, rest, [{ trigger, devices }]);
  return { duplicate: duplicates > 0 && runIds.length === 0, runIds };
}

/**
 * Fires occurrences of one automation together (the events of a batch, or one occurrence): per round of occurrences
 * naming each device once, one transaction writes every run with its items and audit rows (set-based: one statement
 * for the runs and items, one for the audit rows, however many devices), then the actions run for all of them: a
 * run-script action starts one script run per organization. Answers the runs created, and how many runs their
 * occurrences had already (duplicates).
 */
export async function fireAll(
  db: Db,
  firing: Firing,
  occurrences: Occurrence[],
): Promise<{ runIds: string[]; duplicates: number }> {
  const { automation } = firing;
  const { guards } = automation;
  // A window suppressing automations holds the device back; one suppressing scripts, an automation that runs one.
  const runsScripts = automation.actions.some((action) => action.type === 'run-script');
  const held = guards.respectMaintenance
    ? await suppressingWindows(
        db,
        occurrences.flatMap((o) => o.devices.map((d) => ({ orgId: d.orgId, deviceId: d.id }))),
        runsScripts ? ['automations', 'scripts'] : ['automations'],
      )
    : new Map<string, string>();
  const runIds: string[] = [];
  let duplicates = 0;
  for (const round of rounds(occurrences)) {
    const deviceOf = new Map(round.flatMap((o) => o.devices.map((d) => [d.id, d] as const)));
    const runs = round.map((o) => {
      const orgIds = new Set(o.devices.map((d) => d.orgId));
      // An automation of one organization with no device in scope still records its run there.
      if (orgIds.size === 0 && automation.orgId) orgIds.add(automation.orgId);
      return { trigger: o.trigger, orgIds: [...orgIds] };
    });
    const expected = runs.reduce((n, r) => n + r.orgIds.length, 0);
    if (expected === 0) continue;
    const created = await db.transaction(async (tx) => {
      const rows = await store.insertRunsWithItems(
        tx,
        {
          automationId: automation.id,
          automationVersion: automation.version,
          partnerId: automation.partnerId,
          startedBy: { ...firing.startedBy },
          guarded: firing.guarded,
          maxRuns: guards.maxRunsPerDevice,
          windowMinutes: guards.windowMinutes,
          queue: guards.concurrency === 'queue',
        },
        runs,
        round.flatMap((o, k) =>
          o.devices.map((d) => ({ k, deviceId: d.id, orgId: d.orgId, windowId: held.get(d.id) ?? null })),
        ),
      );
      const byRun = new Map<string, store.CreatedRow[]>();
      for (const row of rows) byRun.set(row.runId, [...(byRun.get(row.runId) ?? []), row]);
      const triggerOf = new Map(round.map((o) => [o.trigger.occurrenceKey, o.trigger]));
      await auditRuns(
        tx,
        { ...firing.audit },
        automation,
        [...byRun.values()].map((each) => {
          const items = each.filter((row) => row.itemId !== null);
          const count = (reason: SkipReason) => items.filter((i) => i.skipReason === reason).length;
          return {
            orgId: each[0]!.orgId,
            details: {
              runId: each[0]!.runId,
              version: automation.version,
              trigger: triggerOf.get(each[0]!.occurrenceKey),
              devices: items.length,
              skipped: {
                loopGuard: count('loop-guard'),
                concurrency: count('concurrency'),
                maintenance: count('maintenance'),
              },
            },
          };
        }),
      );
      return { runIds: [...byRun.keys()], rows };
    });
    runIds.push(...created.runIds);
    duplicates += expected - created.runIds.length;
    const items = created.rows.flatMap((row) =>
      row.itemId && row.deviceId ? [{ ...row, id: row.itemId, device: deviceOf.get(row.deviceId)! }] : [],
    );
    await runActions(
      db,
      automation,
      items.filter((i) => i.status === 'completed'),
      firing.startedBy,
    );
    const queued = items.filter((i) => i.status === 'queued');
    if (queued.length > 0) {
      const busy = await store.selectBusyDevices(
        db,
        automation.id,
        queued.map((i) => i.device.id),
      );
      for (const item of queued)
        await armAt(
          { kind: dequeueJobKind, itemId: item.id, automationId: automation.id, deviceId: item.device.id },
          busy.get(item.device.id) ?? new Date(),
        );
    }
  }
  return { runIds, duplicates };
}

/**
 * Occurrences in rounds that name each device once (an occurrence stays whole), so that the guards of a device's
 * later occurrence count its earlier one's run, as occurrences fired one after the other would.
 */
function rounds(occurrences: Occurrence[]): Occurrence[][] {
  const out: { occurrences: Occurrence[]; devices: Set<string> }[] = [];
  for (const occurrence of occurrences) {
    const devices = [...new Map(occurrence.devices.map((d) => [d.id, d])).values()];
    let round = out.find((r) => devices.every((d) => !r.devices.has(d.id)));
    if (!round) {
      round = { occurrences: [], devices: new Set() };
      out.push(round);
    }
    round.occurrences.push({ ...occurrence, devices });
    for (const d of devices) round.devices.add(d.id);
  }
  return out.map((r) => r.occurrences);
}

export const dequeueJobKind = 'automations.dequeue';

/**
 * A queued item (its device was busy with this automation's script) runs once that script has finished; while it has
 * not, the job is armed again for its deadline.
 */
export async function runQueuedItem(db: Db, job: { itemId: string; automationId: string; deviceId: string }) {
  const automation = await store.selectLiveAutomation(db, job.automationId);
  if (!automation) return;
  const busy = await store.selectBusyDevices(db, job.automationId, [job.deviceId]);
  if (busy.has(job.deviceId)) {
    await armAt({ kind: dequeueJobKind, ...job }, busy.get(job.deviceId) ?? new Date(Date.now() + 60_000));
    return;
  }
  const { rows } = await db.query<{ runId: string; device: store.ScopeDevice }>(
    `UPDATE automation_run_items i SET status = 'completed'
       FROM devices d JOIN organizations o ON o.id = d.org_id JOIN sites s ON s.id = d.site_id
      WHERE i.id = :itemId::uuid AND i.status = 'queued' AND d.id = i.device_id
      RETURNING i.run_id AS "runId", jsonb_build_object('id', d.id, 'orgId', d.org_id, 'partnerId', o.partner_id,
        'siteId', d.site_id, 'hostname', d.hostname, 'timezone', coalesce(s.timezone, 'UTC')) AS device`,
    { itemId: job.itemId },
  );
  const claimed = rows[0];
  if (!claimed) return;
  await runActions(
    db,
    automation,
    [{ id: job.itemId, runId: claimed.runId, device: claimed.device }],
    automation.createdBy,
  );
}

type RunnableItem = { id: string; runId: string; device: store.ScopeDevice };

/** A live script's row as a run needs it. */
async function selectRunScript(db: Db, scriptId: string) {
  const { rows } = await db.query<{
    version: number;
    timeoutSeconds: number;
    parameters: StoredParameter[];
  }>(
    `SELECT version, timeout_seconds AS "timeoutSeconds", parameters FROM scripts
      WHERE id = :scriptId::uuid AND deleted_at IS NULL`,
    { scriptId },
  );
  return rows[0];
}

/**
 * The actions in order, for the items of one or more runs. A run-script action starts one script run per organization
 * for every device still going (its items are the script run's items, sent to the agents online and pending for the
 * others); any other action runs device by device. An action that fails on a device stops that device's actions
 * (onFailure stop) or goes on (continue). A run-script action's outcome is its link to the script run item; an item's
 * other outcomes are written once its actions ran (nothing when every action was a dispatched script).
 */
async function runActions(
  db: Db,
  automation: store.AutomationRow,
  items: RunnableItem[],
  startedBy: store.Actor,
): Promise<void> {
  if (items.length === 0) return;
  const outcomes = new Map<string, store.ActionOutcome[]>(items.map((i) => [i.id, []]));
  const stopped = new Set<string>();
  const audit: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
  const fail = (item: RunnableItem, outcome: store.ActionOutcome, onFailure: string) => {
    outcomes.get(item.id)!.push(outcome);
    if (onFailure === 'stop') stopped.add(item.id);
  };
  try {
    for (const [index, action] of automation.actions.entries()) {
      const going = items.filter((i) => !stopped.has(i.id));
      if (going.length === 0) break;
      if (action.type === 'run-script') {
        await runScriptAction(db, automation, index, action, going, startedBy, fail);
        continue;
      }
      for (const item of going) {
        const base = { index, type: action.type };
        try {
          await runDeviceAction(db, automation, item.runId, index, action, item.device, audit);
          outcomes.get(item.id)!.push({ ...base, status: 'completed' });
        } catch (error) {
          fail(item, { ...base, status: 'failed', error: (error as Error).message.slice(0, 500) }, action.onFailure);
        }
      }
    }
  } finally {
    await flushAudit(audit);
  }
  const written = items.filter((item) => outcomes.get(item.id)!.length > 0);
  if (written.length > 0)
    await store.updateItems(
      db,
      written.map((item) => {
        const actions = outcomes.get(item.id)!;
        return { id: item.id, status: actions.some((o) => o.status === 'failed') ? 'failed' : 'completed', actions };
      }),
    );
}

async function runScriptAction(
  db: Db,
  automation: store.AutomationRow,
  index: number,
  action: store.StoredAction,
  going: RunnableItem[],
  startedBy: store.Actor,
  fail: (item: RunnableItem, outcome: store.ActionOutcome, onFailure: string) => void,
): Promise<void> {
  const base = { index, type: action.type };
  const script = await selectRunScript(db, String(action.scriptId));
  const byOrg = new Map<string, RunnableItem[]>();
  for (const item of going) byOrg.set(item.device.orgId, [...(byOrg.get(item.device.orgId) ?? []), item]);
  for (const items of byOrg.values()) {
    let scriptRunId: string | undefined;
    let error: string | undefined;
    try {
      if (!script) throw new Error('The script is gone');
      const parameters = resolveParameters(openParameters(script.parameters), actionParameters(action));
      scriptRunId = await insertScriptRun(db, {
        partnerId: automation.partnerId,
        scriptId: String(action.scriptId),
        scriptVersion: script.version,
        parameters: parameters.stored,
        secrets: Object.keys(parameters.secrets).length > 0 ? parameters.secrets : null,
        timeoutSeconds: script.timeoutSeconds,
        startedBy: { ...startedBy, role: startedBy.role as never },
        devices: items.map((i) => ({ deviceId: i.device.id, orgId: i.device.orgId })),
        pendingHours,
      });
    } catch (caught) {
      error = (caught as Error).message.slice(0, 500);
    }
    if (!scriptRunId) {
      for (const item of items) fail(item, { ...base, status: 'failed', error }, action.onFailure);
      continue;
    }
    await store.linkRunScripts(
      db,
      { actionIndex: index, scriptRunId },
      items.map((i) => ({ itemId: i.id, deviceId: i.device.id })),
    );
    await dispatchRun(db, scriptRunId).catch((caught: unknown) =>
      logger.error('Could not dispatch an automation script run', { scriptRunId, error: String(caught) }),
    );
  }
}

async function runDeviceAction(
  db: Db,
  automation: store.AutomationRow,
  runId: string,
  index: number,
  action: store.StoredAction,
  device: store.ScopeDevice,
  audit: AuditContext,
): Promise<void> {
  switch (action.type) {
    case 'set-custom-field':
      await setSystemValue(db, device.id, String(action.key), action.value as string, audit);
      return;
    case 'add-to-group':
    case 'remove-from-group':
      await changeMemberBySystem(
        db,
        String(action.groupId),
        device,
        action.type === 'add-to-group' ? 'add' : 'remove',
        audit,
      );
      return;
    case 'raise-alert':
      await raiseAlert(db, {
        orgId: device.orgId,
        partnerId: device.partnerId,
        deviceId: device.id,
        sourceType: 'automation',
        sourceId: runId,
        sourceKey: `automation:${automation.id}:${index}`,
        severity: action.severity as 'low',
        title: String(action.title),
        details: { automationId: automation.id, automationName: automation.name, runId, hostname: device.hostname },
      });
      return;
    case 'notify':
      await notifyChannels(db, automation, runId, action, device);
      return;
    default:
      throw new Error(`Unknown action ${action.type}`);
  }
}

/** Tells the action's channels that the automation ran on the device. */
async function notifyChannels(
  db: Db,
  automation: store.AutomationRow,
  runId: string,
  action: store.StoredAction,
  device: store.ScopeDevice,
): Promise<void> {
  const told = await tellAutomation(db, {
    channelIds: action.channelIds as string[],
    orgId: device.orgId,
    title: `Automation ${automation.name} ran on ${device.hostname}`,
    lines: [`Automation: ${automation.name}`, `Device: ${device.hostname}`, `Run: ${runId}`],
    dedupeKey: `automation:${runId}:${device.id}`,
    details: { automationId: automation.id, runId, deviceId: device.id, hostname: device.hostname },
  });
  if (told === 0) throw new Error('No channel of the action serves this organization');
}
