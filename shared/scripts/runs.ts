import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { memberDeviceIds } from '../device-groups/groups.ts';
import { DomainError, ValidationFailed } from '../errors.ts';
import { dispatchRun } from './dispatch.ts';
import { reachableScript, sealClearDefaults } from './library.ts';
import { finishItems } from './outcome.ts';
import { resolveParameters } from './parameters.ts';
import { maxRunDevices, type RunItemsQuery, runItemStatuses, type StartRun } from './schemas.ts';
import { hasClearSecretDefault, openParameters } from './secret-defaults.ts';
import * as store from './store.ts';

/** A pending item (its device offline) expires after this long (docs/scripts.md "Runs"). */
export const pendingHours = 24;
/** Items swept per read: timed-out and expired items are marked when their run is read or a run starts. */
const sweepLimit = 500;

/**
 * POST /scripts/{scriptId}/runs: parameters checked against the declared types and every device found
 * among those the caller reaches before anything is stored or sent; then one item per device, sent at once to the
 * devices online, pending for the others until their agent connects.
 */
export async function startRun(db: Db, principal: Principal, scriptId: string, input: StartRun) {
  requirePermission(principal, 'scripts:run');
  const script = await reachableScript(db, principal, scriptId);
  // A secret default stored in the clear (before defaults were sealed) is sealed on this first read.
  if (hasClearSecretDefault(script.parameters)) await sealClearDefaults(db, scriptId);
  const parameters = resolveParameters(openParameters(script.parameters), input.parameters);
  // A group's members are read now (a dynamic group's filter evaluated once): the run targets these devices.
  const deviceIds = input.groupId
    ? await memberDeviceIds(db, principal, input.groupId, maxRunDevices, 'groupId')
    : input.deviceIds!;
  if (deviceIds.length === 0)
    throw ValidationFailed('The group has no devices', [
      { path: 'body.groupId', message: 'The group has no devices', code: 'custom' },
    ]);
  const devices = await store.selectRunDevices(db, principal, deviceIds);
  const found = new Set(devices.map((d) => d.id));
  const missing = deviceIds.filter((id) => !found.has(id));
  if (missing.length > 0) throw new DomainError('NOT_FOUND', 'Device not found', { deviceIds: missing });
  // An organization's script runs in its organization; a partner script on any device of the partner.
  const outside = devices.filter((d) => (script.orgId ? d.orgId !== script.orgId : d.partnerId !== script.partnerId));
  if (outside.length > 0)
    throw ValidationFailed(
      'Devices outside the script library',
      outside.map((d) => ({
        path: 'body.deviceIds',
        message: `Device ${d.id} is not in the script's ${script.orgId ? 'organization' : 'partner'}`,
        code: 'custom',
      })),
    );
  await sweep(db, null);
  const runId = await store.insertRun(db, {
    partnerId: script.partnerId,
    scriptId,
    scriptVersion: script.version,
    parameters: parameters.stored,
    secrets: Object.keys(parameters.secrets).length > 0 ? parameters.secrets : null,
    timeoutSeconds: input.timeoutSeconds ?? script.timeoutSeconds,
    startedBy: {
      actorType: principal.actorType,
      id: principal.id,
      email: principal.email,
      name: principal.name,
      role: principal.role,
    },
    devices: devices.map((d) => ({ deviceId: d.id, orgId: d.orgId })),
    pendingHours,
  });
  await dispatchRun(db, runId);
  return runView(db, principal, runId, script.parameters);
}

export async function getRun(db: Db, principal: Principal, runId: string) {
  requirePermission(principal, 'scripts:read');
  await sweep(db, runId);
  return runView(db, principal, runId);
}

export async function listRunItems(db: Db, principal: Principal, runId: string, query: RunItemsQuery) {
  requirePermission(principal, 'scripts:read');
  await sweep(db, runId);
  assertReachable(await store.selectRun(db, principal, runId), 'Script run');
  return store.selectRunItems(db, principal, runId, query, query);
}

/** Cancels the items still pending; items already sent run to their end. */
export async function cancelRun(db: Db, principal: Principal, runId: string) {
  requirePermission(principal, 'scripts:run');
  assertReachable(await store.selectRun(db, principal, runId), 'Script run');
  await store.cancelPendingItems(db, principal, runId);
  await store.deleteDeliveredSecrets(db, [runId]);
  return runView(db, principal, runId);
}

async function runView(db: Db, principal: Principal, runId: string, declared?: { name: string; secret: boolean }[]) {
  const run = assertReachable(await store.selectRun(db, principal, runId), 'Script run');
  const counts = Object.fromEntries(runItemStatuses.map((s) => [s, run.counts[s] ?? 0])) as Record<
    (typeof runItemStatuses)[number],
    number
  >;
  const deviceCount = Object.values(counts).reduce((a, b) => a + b, 0);
  const secretNames = declared ?? (await store.selectVersionParameters(db, run.scriptId, run.scriptVersion)) ?? [];
  return {
    id: run.id,
    scriptId: run.scriptId,
    scriptName: run.scriptName,
    scriptVersion: run.scriptVersion,
    parameters: run.parameters,
    secretParameters: secretNames.filter((p) => p.secret).map((p) => p.name),
    timeoutSeconds: run.timeoutSeconds,
    startedBy: {
      actorType: run.startedBy.actorType,
      id: run.startedBy.id,
      email: run.startedBy.email,
      name: run.startedBy.name,
    },
    createdAt: run.createdAt,
    deviceCount,
    counts,
    done: counts.pending + counts.sent + counts.running === 0,
  };
}

/**
 * Marks items past their deadline timed-out (each with its script.execute row) and pending items past their expiry
 * expired: of one run when it is read, of any run when a run starts. No timer runs while nothing is read (no idle cost).
 */
export async function sweep(db: Db, runId: string | null): Promise<void> {
  await finishItems(db, (tx) => store.sweepItems(tx, runId, sweepLimit));
  if (runId) await store.deleteDeliveredSecrets(db, [runId]);
}
