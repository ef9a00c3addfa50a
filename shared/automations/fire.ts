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
import { actionParameters, auditAutomation } from './stored.ts';

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

export interface Firing {
  automation: store.AutomationRow;
  trigger: store.RunTrigger;
  /** Counted by the loop guard: every trigger but a manual run. */
  guarded: boolean;
  devices: store.ScopeDevice[];
  /** Who the run's audit row and script runs name: the caller of a manual run, else the system for the author. */
  audit: AuditContext;
  startedBy: store.Actor;
}

/** Fires: answers the runs created (none when the occurrence had run already: a duplicate). */
export async function fire(db: Db, firing: Firing): Promise<{ duplicate: boolean; runIds: string[] }> {
  const { automation } = firing;
  const byOrg = new Map<string, store.ScopeDevice[]>();
  for (const device of firing.devices) byOrg.set(device.orgId, [...(byOrg.get(device.orgId) ?? []), device]);
  // An automation of one organization with no device in scope still records its run there.
  if (byOrg.size === 0 && automation.orgId) byOrg.set(automation.orgId, []);
  const runIds: string[] = [];
  let duplicate = false;
  for (const [orgId, devices] of byOrg) {
    const decisions = await decide(db, automation, devices, firing.guarded);
    const created = await db.transaction(async (tx) => {
      const run = await store.insertRun(tx, {
        automationId: automation.id,
        automationVersion: automation.version,
        partnerId: automation.partnerId,
        orgId,
        trigger: firing.trigger,
        startedBy: { ...firing.startedBy },
      });
      if (!run) return undefined;
      const ids = await store.insertItems(
        tx,
        { runId: run.id, automationId: automation.id, orgId, guarded: firing.guarded },
        devices.map((device) => {
          const decision = decisions.get(device.id)!;
          return {
            deviceId: device.id,
            status: decision.status === 'run' ? 'completed' : decision.status,
            skipReason: decision.skipReason,
            maintenanceWindowId: decision.maintenanceWindowId,
          };
        }),
      );
      const items = devices.map((device) => ({ id: ids.get(device.id)!, device, decision: decisions.get(device.id)! }));
      const count = (reason: SkipReason) => items.filter((i) => i.decision.skipReason === reason).length;
      await auditAutomation(tx, { ...firing.audit }, { ...automation, orgId }, 'automation.run', {
        runId: run.id,
        version: automation.version,
        trigger: firing.trigger,
        devices: items.length,
        skipped: {
          loopGuard: count('loop-guard'),
          concurrency: count('concurrency'),
          maintenance: count('maintenance'),
        },
      });
      return { runId: run.id, items };
    });
    if (!created) {
      duplicate = true;
      continue;
    }
    runIds.push(created.runId);
    const runnable = created.items.filter((i) => i.decision.status === 'run');
    await runActions(db, automation, created.runId, runnable, firing.startedBy);
    for (const queued of created.items.filter((i) => i.decision.status === 'queued'))
      await armAt(
        { kind: dequeueJobKind, itemId: queued.id, automationId: automation.id, deviceId: queued.device.id },
        queued.decision.until ?? new Date(),
      );
  }
  return { duplicate: duplicate && runIds.length === 0, runIds };
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
  await runActions(db, automation, claimed.runId, [{ id: job.itemId, device: claimed.device }], automation.createdBy);
}

type RunnableItem = { id: string; device: store.ScopeDevice };

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
 * The actions in order. A run-script action starts one script run for every device still going (its items are the
 * script run's items, sent to the agents online and pending for the others); any other action runs device by device.
 * An action that fails on a device stops that device's actions (onFailure stop) or goes on (continue).
 */
async function runActions(
  db: Db,
  automation: store.AutomationRow,
  runId: string,
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
        await runScriptAction(db, automation, index, action, going, startedBy, outcomes, fail);
        continue;
      }
      for (const item of going) {
        const base = { index, type: action.type };
        try {
          await runDeviceAction(db, automation, runId, index, action, item.device, audit);
          outcomes.get(item.id)!.push({ ...base, status: 'completed' });
        } catch (error) {
          fail(item, { ...base, status: 'failed', error: (error as Error).message.slice(0, 500) }, action.onFailure);
        }
      }
    }
  } finally {
    await flushAudit(audit);
  }
  await store.updateItems(
    db,
    items.map((item) => {
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
  outcomes: Map<string, store.ActionOutcome[]>,
  fail: (item: RunnableItem, outcome: store.ActionOutcome, onFailure: string) => void,
): Promise<void> {
  const base = { index, type: action.type };
  const script = await selectRunScript(db, String(action.scriptId));
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
      devices: going.map((i) => ({ deviceId: i.device.id, orgId: i.device.orgId })),
      pendingHours,
    });
  } catch (caught) {
    error = (caught as Error).message.slice(0, 500);
  }
  if (!scriptRunId) {
    for (const item of going) fail(item, { ...base, status: 'failed', error }, action.onFailure);
    return;
  }
  const { rows } = await db.query<{ id: string; deviceId: string }>(
    'SELECT id, device_id AS "deviceId" FROM script_run_items WHERE run_id = :scriptRunId::uuid',
    { scriptRunId },
  );
  const itemOf = new Map(rows.map((row) => [row.deviceId, row.id]));
  const links = going.map((item) => ({ runItemId: item.id, scriptRunItemId: itemOf.get(item.device.id)! }));
  await store.insertRunScripts(db, { actionIndex: index, scriptRunId }, links);
  for (const link of links)
    outcomes
      .get(link.runItemId)!
      .push({ ...base, status: 'dispatched', scriptRunId, scriptRunItemId: link.scriptRunItemId });
  await dispatchRun(db, scriptRunId).catch((caught: unknown) =>
    logger.error('Could not dispatch an automation script run', { scriptRunId, error: String(caught) }),
  );
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
