import type { z } from 'zod';
import { heartbeat } from '../agents/heartbeat.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import { heartbeatSeconds } from '../agents/online.ts';
import type { heartbeat as heartbeatSchema } from '../agents/schemas.ts';
import {
  type AfterCommit,
  type MonitorFiring,
  raiseMonitorAlert,
  resolveMonitorAlert,
  tellPsas,
} from '../alerts/monitor-alerts.ts';
import type { Severity } from '../alerts/schemas.ts';
import { type AuditContext, auditChange, flushAudit, type RouteEvent } from '../audit/writer.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db, Tx } from '../db/db.ts';
import { unkeyedDb } from '../db/idempotency.ts';
import { NotFound } from '../errors.ts';
import { deviceResource } from '../hierarchy/devices.ts';
import { candidatesReadWith } from '../policies/agent-token.ts';
import { type EffectiveDevice, effectivePoliciesOf } from '../policies/effective.ts';
import type { Effective, EffectiveItem } from '../policies/resolve.ts';
import type { checkResultUpload, MetricItem, MonitoringItem, metricUpload } from '../policies/schemas.ts';
import { enqueue } from '../queue/work-queue.ts';
import { severityOf } from '../scripts/outcome.ts';
import * as store from './store.ts';
import { initialState, type Observation, type Sample, step, stepThrough, type Transition } from './transitions.ts';

/** How far ahead of the server an agent's timestamp may lie before it is read as the receipt time. */
const maxFutureMs = 10 * 60 * 1000;

/** An agent's timestamp as stored: in UTC, and never more than ten minutes in the future. */
function sampleTime(text: string, now: number): string {
  const at = Date.parse(/(?:z|[+-]\d\d:?\d\d)$/i.test(text) ? text : `${text}Z`);
  return new Date(at > now + maxFutureMs ? now : at).toISOString();
}

/** One evaluation that moved an item's state: what is audited, raised or resolved. */
export interface Moved {
  effective: EffectiveItem;
  from: store.StateRow['state'];
  to: store.StateRow['state'];
  transition: Transition;
  /** The item's open alert before this upload. */
  alertBefore: string | null;
  value: number | null;
  evidence: unknown[];
  severity: Severity;
}

type Evaluated = { itemKey: string; from: Moved['from']; to: Moved['from'] };

/** The previous state of an item, or a fresh one when the item is new here or now comes from another policy. */
export function previousOf(effective: EffectiveItem, row: store.StateRow | null, at: Date): store.StateRow {
  if (row && row.policyId === effective.origin.policyId && row.itemType === effective.item.type) return row;
  return {
    ...initialState(at),
    itemKey: effective.key,
    policyId: effective.origin.policyId,
    policyVersion: effective.origin.policyVersion,
    itemType: String(effective.item.type),
    alertId: null,
    armedUntil: null,
  };
}

const describe: Record<string, (item: MonitoringItem, value: number | null) => string> = {
  metric: (item, value) => {
    const m = item as MetricItem;
    const shown = value === null ? '' : ` ${Math.round(value * 100) / 100}`;
    return `${m.metric}${m.volume ? ` ${m.volume}` : ''} ${m.aggregation}${shown} ${m.op === 'gt' ? '>' : '<'} ${m.threshold}`;
  },
  offline: (item) => `offline for ${(item as { minutes: number }).minutes} minutes`,
  service: (item) => `service ${(item as { name: string }).name} not ${(item as { expect: string }).expect}`,
  process: (item) => `process ${(item as { name: string }).name} not ${(item as { expect: string }).expect}`,
  'event-log': () => 'event log match',
  script: (_item, value) => `check script failed${value === null ? '' : ` with exit code ${value}`}`,
};

/**
 * Applies the evaluations that moved a state, in the transaction that stored their data: the states, one
 * `policy.evaluate` row per change of state (not per sample), the alerts raised by firing items and resolved by
 * clearing ones (when the item resolves on its own).
 */
export async function applyEvaluations(
  tx: Tx,
  audit: AuditContext,
  device: EffectiveDevice,
  written: store.StateRow[],
  moves: Moved[],
  after: AfterCommit[],
) {
  // The open alert of each item as the moves go, in their order: one upload may fire and clear an item.
  const alertOf = new Map<string, string | null>();
  const events: RouteEvent[] = [];
  for (const move of moves) {
    const item = move.effective.item as MonitoringItem;
    const key = move.effective.key;
    if (!alertOf.has(key)) alertOf.set(key, move.alertBefore);
    if (move.transition === 'fire') {
      const firing: MonitorFiring = {
        orgId: device.orgId,
        partnerId: device.partnerId,
        deviceId: device.id,
        hostname: device.hostname,
        policyId: move.effective.origin.policyId,
        policyName: move.effective.origin.policyName,
        policyVersion: move.effective.origin.policyVersion,
        itemKey: key,
        item,
        severity: move.severity,
        title: `${key}: ${describe[item.type]!(item, move.value)} on ${device.hostname}`,
        value: move.value,
        evidence: move.evidence,
      };
      alertOf.set(key, (await raiseMonitorAlert(tx, audit, firing, after)).id);
    }
    const alertId = alertOf.get(key) ?? null;
    if (move.transition === 'resolve' && alertId) {
      if (item.autoResolve !== false)
        await resolveMonitorAlert(
          tx,
          audit,
          alertId,
          { policyId: move.effective.origin.policyId, itemKey: key, value: move.value },
          after,
        );
      alertOf.set(key, null);
    }
    events.push({
      orgId: device.orgId,
      action: 'policy.evaluate',
      ...deviceResource({ id: device.id, hostname: device.hostname, displayName: null }),
      details: {
        policyId: move.effective.origin.policyId,
        policyName: move.effective.origin.policyName,
        policyVersion: move.effective.origin.policyVersion,
        itemKey: key,
        before: { state: move.from },
        after: { state: move.to },
        value: move.value,
        ...(alertId ? { alertId } : {}),
      },
    });
  }
  for (const state of written) if (alertOf.has(state.itemKey)) state.alertId = alertOf.get(state.itemKey) ?? null;
  await store.writeStates(tx, device.id, device.orgId, written);
  if (events.length > 0) await auditChange(tx, audit, events);
}

/** Steps one item and records what it did. */
export function evaluateOne(
  effective: EffectiveItem,
  previous: store.StateRow,
  observation: Observation,
  evidence: unknown[],
  severity: Severity,
  written: store.StateRow[],
  moves: Moved[],
) {
  const pendingSeconds = Number((effective.item as { pendingSeconds?: number }).pendingSeconds ?? 0);
  const { next, transition } = step(previous, observation, pendingSeconds);
  const state: store.StateRow = {
    ...previous,
    ...next,
    policyVersion: effective.origin.policyVersion,
  };
  written.push(state);
  if (transition)
    moves.push({
      effective,
      from: previous.state,
      to: state.state,
      transition,
      alertBefore: previous.alertId,
      value: observation.value,
      evidence,
      severity,
    });
}

const severityOfItem = (effective: EffectiveItem) => effective.item.severity as Severity;

/** Samples of the window as the alert shows them: the newest 20. */
const evidenceOf = (samples: readonly Sample[], at: number) =>
  samples
    .filter((s) => s.at <= at)
    .slice(-20)
    .map((s) => ({ volume: s.volume || null, value: s.value, timestamp: new Date(s.at).toISOString() }));

/** The calling agent's device and its effective monitoring items (from the candidates read with its token, if any). */
export async function monitoringOfAgent(db: Db, caller: AgentPrincipal, agentId: string) {
  const agent = await deviceOfAgent(db, caller, agentId);
  const resolved = await effectivePoliciesOf(db, agent.id, 'monitoring', candidatesReadWith(caller, 'monitoring'));
  if (!resolved) throw NotFound('Agent');
  return resolved;
}

/** A metric item an upload's samples concern, and the distinct times of those samples, oldest first. */
interface Watched {
  effective: EffectiveItem;
  item: MetricItem;
  times: number[];
}

type UploadedSample = { metric: string; volume: string; at: string; value: number };

/** The windows an evaluation reads: each watched item's, from its oldest new sample's window start to its newest. */
const windowsOf = (watched: readonly Watched[]) =>
  watched.map((w) => ({
    key: w.effective.key,
    metric: w.item.metric,
    volume: w.item.volume ?? null,
    from: new Date(w.times[0]! - w.item.windowSeconds * 1000).toISOString(),
    to: new Date(w.times[w.times.length - 1]!).toISOString(),
  }));

/**
 * Steps each watched item through its window from its stored state: the states to write and the moves they made.
 * Samples older than an item's last evaluation are judged by nothing (they move nothing back).
 */
function evaluateWindows(
  watched: readonly Watched[],
  windows: readonly { state: store.StateRow | null; samples: Sample[] | null }[],
) {
  const written: store.StateRow[] = [];
  const moves: Moved[] = [];
  for (const [index, w] of watched.entries()) {
    const previous = previousOf(w.effective, windows[index]!.state, new Date(w.times[0]!));
    const evaluatedAt = previous.lastEvaluatedAt?.getTime() ?? Number.NEGATIVE_INFINITY;
    const times = w.times.filter((at) => at > evaluatedAt);
    const series = (windows[index]!.samples ?? []).map((s) => ({ ...s, at: Number(s.at) }));
    const { state, steps } = stepThrough(w.item, previous, series, times);
    if (state === previous) continue;
    written.push({ ...state, policyVersion: w.effective.origin.policyVersion });
    let before = previous;
    for (const move of steps) {
      moves.push({
        effective: w.effective,
        from: before.state,
        to: move.state.state,
        transition: move.transition,
        alertBefore: previous.alertId,
        value: move.value,
        evidence: evidenceOf(series, move.at),
        severity: severityOfItem(w.effective),
      });
      before = move.state;
    }
  }
  return { written, moves };
}

/**
 * An upload whose samples move no item's state, in two statements and no transaction: the windows read as stored
 * with the upload's samples added (a sample already stored keeps its stored value, as the insert keeps it), then one
 * statement that takes the device's lock (an evaluation holding it has committed by then), stores the samples and
 * writes each evaluated state only where it is still the one read (its row version). It settles nothing (the caller
 * evaluates under the device's lock) when an item would move (its alert, audit and tickets go with the transaction)
 * or another evaluation wrote a state in between; what it stored then stays, counted in `accepted`.
 */
async function evaluateQuietly(
  db: Db,
  device: { id: string; orgId: string },
  watched: Watched[],
  samples: UploadedSample[],
) {
  const ranges = windowsOf(watched);
  const windows = await store.selectWindows(db, device.id, ranges);
  const withUpload = windows.map((window, index) => {
    const w = watched[index]!;
    const from = Date.parse(ranges[index]!.from);
    const stored = window.samples ?? [];
    const known = new Set(stored.map((s) => `${s.volume}\u0000${Number(s.at)}`));
    const to = w.times[w.times.length - 1]!;
    // The first sample of a volume and time counts, as the insert keeps the first (and a stored one before it).
    const added = samples
      .filter((s) => s.metric === w.item.metric && (w.item.volume === undefined || s.volume === w.item.volume))
      .map((s) => ({ volume: s.volume, value: s.value, at: Date.parse(s.at) }))
      .filter((s) => {
        const key = `${s.volume}\u0000${s.at}`;
        if (s.at <= from || s.at > to || known.has(key)) return false;
        known.add(key);
        return true;
      });
    const merged = [...stored.map((s) => ({ ...s, at: Number(s.at) })), ...added].sort((a, b) => a.at - b.at);
    return { state: window.state, samples: merged };
  });
  const { written, moves } = evaluateWindows(watched, withUpload);
  if (moves.length > 0) return { accepted: 0, settled: false };
  const versions = new Map(windows.map((window, index) => [watched[index]!.effective.key, window.version]));
  const { accepted, writtenKeys } = await store.insertSamplesAndWriteStates(
    db,
    device.id,
    device.orgId,
    samples,
    written.map((state) => ({ ...state, version: versions.get(state.itemKey) ?? null })),
  );
  return { accepted, settled: writtenKeys.length === written.length };
}

/**
 * PUT /agents/{id}/metrics: stores the samples (a repeat of one already stored is kept once) and evaluates the
 * device's metric items that watch them, in the request, at the newest sample's time. A window without samples
 * judges nothing; samples older than the item's last evaluation are stored but move nothing back.
 */
export async function uploadMetrics(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  body: z.output<typeof metricUpload>,
  audit: AuditContext,
) {
  const { device, effective } = await monitoringOfAgent(db, caller, agentId);
  const now = Date.now();
  const samples = body.samples.map((s) => ({
    metric: s.metric,
    volume: s.volume ?? '',
    at: sampleTime(s.timestamp, now),
    value: s.value,
  }));
  const watched = effective.items.flatMap((e): Watched[] => {
    const item = e.item as MonitoringItem;
    if (item.type !== 'metric') return [];
    const times = [
      ...new Set(
        samples
          .filter((s) => s.metric === item.metric && (item.volume === undefined || s.volume === item.volume))
          .map((s) => Date.parse(s.at)),
      ),
    ].sort((a, b) => a - b);
    return times.length === 0 ? [] : [{ effective: e, item, times }];
  });
  // Samples no item watches are one statement: no transaction (its Begin and Commit would double the Data API calls
  // of the upload). Watched samples that move nothing are two (evaluateQuietly); the rest is one transaction.
  if (watched.length === 0) {
    const accepted = await store.insertSamples(db, device.id, device.orgId, samples);
    return { accepted, duplicates: samples.length - accepted, ignored: 0, transitions: [] as Evaluated[] };
  }
  const quiet = await evaluateQuietly(db, device, watched, samples);
  if (quiet.settled)
    return {
      accepted: quiet.accepted,
      duplicates: samples.length - quiet.accepted,
      ignored: 0,
      transitions: [] as Evaluated[],
    };
  const after: AfterCommit[] = [];
  const outcome = await db.transaction(async (tx) => {
    const accepted = await store.insertSamples(tx, device.id, device.orgId, samples);
    const windows = await store.selectWindows(tx, device.id, windowsOf(watched));
    const { written, moves } = evaluateWindows(watched, windows);
    await applyEvaluations(tx, audit, device, written, moves, after);
    const transitions: Evaluated[] = moves.map((m) => ({ itemKey: m.effective.key, from: m.from, to: m.to }));
    return { accepted, transitions };
  });
  await tellPsas(db, after);
  const accepted = quiet.accepted + outcome.accepted;
  return { accepted, duplicates: samples.length - accepted, ignored: 0, transitions: outcome.transitions };
}

const checkTypes = new Set(['service', 'process', 'event-log', 'script']);

/**
 * POST /agents/{id}/check-results: stores each result naming an item in force on the device (others are ignored)
 * once per (device, item, time) and evaluates it: a failed check holds the item's condition, a passed one its clear
 * condition. A script check's failure takes the severity its script maps the exit code (`value`) to, else the item's.
 */
export async function uploadCheckResults(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  body: z.output<typeof checkResultUpload>,
  audit: AuditContext,
) {
  const { device, effective } = await monitoringOfAgent(db, caller, agentId);
  const byKey = new Map(
    effective.items.filter((e) => checkTypes.has(String(e.item.type))).map((e) => [e.key, e] as const),
  );
  const now = Date.now();
  const results = body.results
    .filter((r) => byKey.has(r.itemKey))
    .map((r) => ({
      itemKey: r.itemKey,
      status: r.status,
      value: r.value ?? null,
      output: r.output ?? null,
      at: sampleTime(r.timestamp, now),
    }))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  if (results.length === 0)
    return { accepted: 0, duplicates: 0, ignored: body.results.length, transitions: [] as Evaluated[] };
  const mappings = await scriptMappings(db, [...byKey.values()]);
  /** Steps each new result's item from its state: the states to write and the moves they made. */
  const evaluate = (fresh: Set<string>, states: Map<string, store.StateRow>) => {
    const written = new Map<string, store.StateRow>();
    const moves: Moved[] = [];
    for (const result of results) {
      if (!fresh.has(resultKey(result))) continue;
      const e = byKey.get(result.itemKey)!;
      const at = new Date(result.at);
      const previous = previousOf(e, written.get(e.key) ?? states.get(e.key) ?? null, at);
      if (previous.lastEvaluatedAt && previous.lastEvaluatedAt >= at) continue;
      const failed = result.status === 'fail';
      const item = e.item as MonitoringItem;
      let severity = severityOfItem(e);
      if (item.type === 'script' && failed && result.value !== null) {
        const mapped = severityOf(mappings.get(item.scriptId) ?? null, result.value);
        if (mapped !== 'none') severity = mapped;
      }
      const list: store.StateRow[] = [];
      evaluateOne(
        e,
        previous,
        { at, value: result.value, bad: failed, good: !failed },
        [{ status: result.status, value: result.value, output: result.output, timestamp: result.at }],
        severity,
        list,
        moves,
      );
      written.set(e.key, list[0]!);
    }
    return { written: [...written.values()], moves };
  };
  const keys = [...new Set(results.map((r) => r.itemKey))];
  // Results that move no item are a read and one write, no transaction (as a metrics upload's samples).
  const read = await store.selectCheckStates(db, device.id, keys, results);
  const quiet = evaluate(new Set(results.map(resultKey).filter((key) => !read.stored.has(key))), read.states);
  let stored: string[] = [];
  if (quiet.moves.length === 0) {
    const outcome = await store.insertCheckResultsAndWriteStates(
      db,
      device.id,
      device.orgId,
      results,
      quiet.written.map((state) => ({ ...state, version: read.states.get(state.itemKey)?.version ?? null })),
    );
    stored = outcome.insertedKeys;
    if (outcome.writtenKeys.length === quiet.written.length)
      return {
        accepted: stored.length,
        duplicates: results.length - stored.length,
        ignored: body.results.length - results.length,
        transitions: [] as Evaluated[],
      };
  }
  const after: AfterCommit[] = [];
  const outcome = await db.transaction(async (tx) => {
    const inserted = await store.insertCheckResults(tx, device.id, device.orgId, results);
    const states = new Map((await store.selectStates(tx, device.id, keys)).map((state) => [state.itemKey, state]));
    // New are the results stored now, and those the write above stored without its states.
    const { written, moves } = evaluate(new Set([...inserted.map(resultKey), ...stored]), states);
    await applyEvaluations(tx, audit, device, written, moves, after);
    return {
      accepted: inserted.length,
      transitions: moves.map((m) => ({ itemKey: m.effective.key, from: m.from, to: m.to })),
    };
  });
  await tellPsas(db, after);
  const accepted = stored.length + outcome.accepted;
  return {
    accepted,
    duplicates: results.length - accepted,
    ignored: body.results.length - results.length,
    transitions: outcome.transitions,
  };
}

/** A check result's identity: its item and its time (as stored, an ISO instant). */
const resultKey = (r: { itemKey: string; at: string | Date }) => `${r.itemKey}@${new Date(r.at).toISOString()}`;

/** The exit-code mappings of the scripts that script checks run. */
async function scriptMappings(db: Db, items: EffectiveItem[]) {
  const ids = [...new Set(items.filter((e) => e.item.type === 'script').map((e) => String(e.item.scriptId)))];
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; mapping: Parameters<typeof severityOf>[0] }>(
    `SELECT id, exit_code_severity_mapping AS mapping FROM scripts
      WHERE id IN (SELECT jsonb_array_elements_text(:ids::jsonb)::uuid)`,
    { ids },
  );
  return new Map(rows.map((r) => [r.id, r.mapping]));
}

/** The job judging whether a device went offline: queued for the time its offline item is due. */
export const offlineJobKind = 'monitoring.offline';

/**
 * After a heartbeat: arms the device's offline items (a job at last seen + the item's minutes, unless one is
 * armed already) and clears those that were pending or firing: the device is back. Nothing is written when every
 * offline item is armed and ok, and a device without offline items costs nothing here. A device with a live
 * WebSocket connection (`connected`) is online by it: nothing is armed (its $disconnect arms the items), and only the
 * items not ok are judged (they clear).
 */
export async function offlineAfterHeartbeat(
  db: Db,
  deviceId: string,
  orgId: string,
  audit: AuditContext,
  connected = false,
): Promise<string | undefined> {
  const resolved = await effectivePoliciesOf(db, deviceId, 'monitoring');
  if (!resolved) return undefined;
  return offlineAfterResolved(db, deviceId, orgId, audit, connected, resolved.effective);
}

/**
 * offlineAfterHeartbeat with the device's effective monitoring items already resolved (a batch of heartbeats resolves
 * its devices' together): answers their configVersion.
 */
export async function offlineAfterResolved(
  db: Db,
  deviceId: string,
  orgId: string,
  audit: AuditContext,
  connected: boolean,
  effective: Effective,
): Promise<string> {
  const offline = effective.items.filter((e) => e.item.type === 'offline');
  if (offline.length > 0 && connected) {
    const states = await store.selectStates(
      db,
      deviceId,
      offline.map((e) => e.key),
    );
    const back = states.filter((s) => s.state !== 'ok').map((s) => s.itemKey);
    if (back.length > 0) await judgeOffline(db, deviceId, back, audit);
  } else if (offline.length > 0) {
    const rows = await store.armOffline(
      db,
      deviceId,
      orgId,
      offline.map((e) => ({
        key: e.key,
        policyId: e.origin.policyId,
        policyVersion: e.origin.policyVersion,
        minutes: Number(e.item.minutes),
      })),
    );
    for (const row of rows.filter((r) => r.armed)) await armJob(deviceId, row.itemKey, new Date(row.armedUntil));
    const back = rows.filter((r) => r.state !== 'ok').map((r) => r.itemKey);
    if (back.length > 0) await judgeOffline(db, deviceId, back, audit);
  }
  return effective.configVersion;
}

/**
 * A device's connection opened: it is online by it, so its offline items that were pending or firing (read by the
 * statement recording the connection) clear; nothing more when none was.
 */
export const offlineAfterConnect = {
  read: store.offlineNotOkSql,
  run: async (db: Db, deviceId: string, _connectionId: string, back: string[]): Promise<void> => {
    if (back.length > 0) await judgeOffline(db, deviceId, back);
  },
};

/**
 * A device's connection closed and no newer one stands: its offline items are armed for now (its last seen) + their
 * minutes, as after a last heartbeat.
 */
export async function offlineAfterDisconnect(db: Db, deviceId: string, orgId: string): Promise<void> {
  const context: AuditContext = { db: unkeyedDb(db), caller: null, pending: [] };
  try {
    await offlineAfterHeartbeat(db, deviceId, orgId, context);
  } finally {
    await flushAudit(context);
  }
}

/** The job of one armed offline item: it carries the time it was armed for, so a job a later arm replaced does nothing. */
export type OfflineJob = { kind: typeof offlineJobKind; deviceId: string; itemKey: string; until: string };

async function armJob(deviceId: string, itemKey: string, until: Date) {
  const job: OfflineJob = { kind: offlineJobKind, deviceId, itemKey, until: until.toISOString() };
  await enqueue(job, Math.max(0, (until.getTime() - Date.now()) / 1000));
}

/** The queued job, when it is due: judges its item unless another arm replaced it. */
export function runOfflineJob(db: Db, job: OfflineJob) {
  return judgeOffline(db, job.deviceId, [job.itemKey], undefined, new Date(job.until));
}

/**
 * Judges offline items of a device against its last heartbeat, re-reading everything: the queued job when it is
 * due, or a heartbeat for items that were not ok. An item due and still unseen fires; one whose device was seen
 * since is re-armed for last seen + minutes (a device that came back raises nothing), and one that fired clears.
 * With `armedFor` (a job's), an item armed for another time since is left to the job of that arm.
 */
export async function judgeOffline(
  db: Db,
  deviceId: string,
  itemKeys: string[],
  audit?: AuditContext,
  armedFor?: Date,
) {
  const context: AuditContext = audit ?? { db: unkeyedDb(db), caller: null, pending: [] };
  const after: AfterCommit[] = [];
  const rearm: { itemKey: string; until: Date }[] = [];
  try {
    await db.transaction(async (tx) => {
      await store.lockDevice(tx, deviceId);
      const seen = await store.selectLastSeen(tx, deviceId);
      if (!seen) return;
      const resolved = await effectivePoliciesOf(tx, deviceId, 'monitoring');
      if (!resolved) return;
      const states = new Map((await store.selectStates(tx, deviceId, itemKeys)).map((s) => [s.itemKey, s]));
      const now = new Date();
      const written: store.StateRow[] = [];
      const moves: Moved[] = [];
      for (const key of itemKeys) {
        const e = resolved.effective.items.find((i) => i.key === key && i.item.type === 'offline');
        if (!e) continue;
        const minutes = Number(e.item.minutes);
        // A device with a live connection is online now, whenever it last heartbeated.
        const lastSeen = seen.connected ? now : (seen.lastSeenAt ?? new Date(0));
        const silentMs = now.getTime() - lastSeen.getTime();
        const bad = silentMs >= minutes * 60_000;
        const stored = states.get(key);
        if (armedFor && stored?.armedUntil?.getTime() !== armedFor.getTime()) continue;
        const previous = previousOf(e, stored ?? null, now);
        const list: store.StateRow[] = [];
        evaluateOne(
          e,
          previous,
          { at: now, value: Math.floor(silentMs / 60_000), bad, good: !bad },
          [{ lastSeenAt: seen.lastSeenAt?.toISOString() ?? null }],
          severityOfItem(e),
          list,
          moves,
        );
        const state = list[0]!;
        // Connected: nothing to arm while the connection stands; its $disconnect arms the item again.
        if (!bad && !seen.connected) {
          state.armedUntil = new Date(lastSeen.getTime() + minutes * 60_000);
          rearm.push({ itemKey: key, until: state.armedUntil });
        } else state.armedUntil = null;
        written.push(state);
      }
      await applyEvaluations(tx, context, resolved.device, written, moves, after);
    });
  } finally {
    if (!audit) await flushAudit(context);
  }
  await tellPsas(db, after);
  for (const { itemKey, until } of rearm) await armJob(deviceId, itemKey, until);
}

/**
 * A heartbeat, from POST /agents/{id}/heartbeat or the agent's WebSocket connection (heartbeat-message.ts) alike: the
 * agents domain records it; then the device's offline monitors are armed again (or clear: the device is back), and the
 * reply names the monitoring config in force and when the next heartbeat is wanted (`heartbeatSeconds`: longer on a
 * connection, which keeps the device online between heartbeats).
 */
export async function heartbeatAndArm(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  report: z.output<typeof heartbeatSchema>,
  audit: AuditContext,
  via: 'http' | 'connection' = 'http',
) {
  const { device, connected, ...reply } = await heartbeat(db, caller, agentId, report, audit);
  const configVersion = (await offlineAfterHeartbeat(db, device.id, device.orgId, audit, connected)) ?? '';
  return {
    ...reply,
    configVersion,
    heartbeatSeconds: via === 'connection' ? heartbeatSeconds.connected : heartbeatSeconds.http,
  };
}
