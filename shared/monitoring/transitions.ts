import type { MetricItem, MonitorStateName } from '../policies/schemas.ts';

/**
 * The one state machine of every monitoring item, shared by evaluation as data arrives and by the backtest.
 *
 * An observation says whether the item's condition holds (`bad`: the threshold is crossed, the check failed, the
 * device is offline) and whether its clear condition holds (`good`: back on the healthy side of the clear
 * threshold, the check passed). Between the two thresholds neither holds: a firing item stays firing and a pending
 * one falls back to ok. A condition must hold for `pendingSeconds` before it moves the state on, in either
 * direction (a firing item clears only after its clear condition held that long).
 */
export interface MonitorState {
  state: MonitorStateName;
  since: Date;
  /** When the condition that moves the state on started to hold, while it holds. */
  conditionSince: Date | null;
  lastValue: number | null;
  lastEvaluatedAt: Date | null;
  firedCount: number;
  resolvedCount: number;
}

export interface Observation {
  at: Date;
  value: number | null;
  bad: boolean;
  good: boolean;
}

export type Transition = 'pending' | 'fire' | 'cancel' | 'resolve';

export const initialState = (at: Date): MonitorState => ({
  state: 'ok',
  since: at,
  conditionSince: null,
  lastValue: null,
  lastEvaluatedAt: null,
  firedCount: 0,
  resolvedCount: 0,
});

/** The next state after one observation, and the transition it made (none: the state stayed). */
export function step(
  previous: MonitorState,
  observation: Observation,
  pendingSeconds: number,
): { next: MonitorState; transition?: Transition } {
  const { at } = observation;
  const base = { ...previous, lastValue: observation.value, lastEvaluatedAt: at };
  const heldSince = (since: Date) => at.getTime() - since.getTime() >= pendingSeconds * 1000;
  switch (previous.state) {
    case 'ok':
    case 'pending': {
      if (!observation.bad) {
        if (previous.state === 'ok') return { next: { ...base, conditionSince: null } };
        return { next: { ...base, state: 'ok', since: at, conditionSince: null }, transition: 'cancel' };
      }
      const conditionSince = previous.state === 'pending' ? (previous.conditionSince ?? at) : at;
      if (heldSince(conditionSince))
        return {
          next: { ...base, state: 'firing', since: at, conditionSince: null, firedCount: previous.firedCount + 1 },
          transition: 'fire',
        };
      if (previous.state === 'pending') return { next: { ...base, conditionSince } };
      return { next: { ...base, state: 'pending', since: at, conditionSince }, transition: 'pending' };
    }
    case 'firing': {
      if (!observation.good) return { next: { ...base, conditionSince: null } };
      const conditionSince = previous.conditionSince ?? at;
      if (heldSince(conditionSince))
        return {
          next: { ...base, state: 'ok', since: at, conditionSince: null, resolvedCount: previous.resolvedCount + 1 },
          transition: 'resolve',
        };
      return { next: { ...base, conditionSince } };
    }
  }
}

const compare = (op: 'gt' | 'lt', value: number, threshold: number) =>
  op === 'gt' ? value > threshold : value < threshold;

/** A metric item's observation of an aggregate: bad beyond the threshold, good back across the clear threshold. */
export function metricObservation(item: MetricItem, at: Date, aggregate: number): Observation {
  return {
    at,
    value: aggregate,
    bad: compare(item.op, aggregate, item.threshold),
    good: !compare(item.op, aggregate, item.clearThreshold),
  };
}

/** The aggregate of the samples in a window; undefined when the window holds none (missing samples are skipped). */
export function aggregate(aggregation: MetricItem['aggregation'], values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  switch (aggregation) {
    case 'avg':
      return values.reduce((sum, v) => sum + v, 0) / values.length;
    case 'max':
      return values.reduce((a, b) => Math.max(a, b));
    case 'min':
      return values.reduce((a, b) => Math.min(a, b));
    case 'last':
      return values[values.length - 1];
  }
}

/** A sample of a metric as evaluation reads it (time in epoch milliseconds). */
export interface Sample {
  volume: string;
  value: number;
  at: number;
}

/**
 * Steps a metric item through `times` (ascending epoch milliseconds), each judged on the window of `samples` (ascending)
 * ending there: per volume, and for an item naming no volume the worst volume. Evaluation as samples arrive and the
 * backtest both call it, so they agree. A window without samples judges nothing.
 */
export function stepThrough<S extends MonitorState>(
  item: MetricItem,
  initial: S,
  samples: readonly Sample[],
  times: readonly number[],
) {
  const windowMs = item.windowSeconds * 1000;
  const byVolume = new Map<string, Sample[]>();
  for (const sample of samples) {
    const list = byVolume.get(sample.volume) ?? [];
    list.push(sample);
    byVolume.set(sample.volume, list);
  }
  // Per volume, the index of the oldest sample still inside the window and the first one past its end.
  const first = new Map<string, number>();
  const past = new Map<string, number>();
  let state: S = initial;
  const steps: { at: number; value: number; transition: Transition; state: S }[] = [];
  for (const at of times) {
    const values: number[] = [];
    for (const [volume, series] of byVolume) {
      let lo = first.get(volume) ?? 0;
      let hi = past.get(volume) ?? 0;
      while (hi < series.length && series[hi]!.at <= at) hi += 1;
      while (lo < hi && series[lo]!.at <= at - windowMs) lo += 1;
      first.set(volume, lo);
      past.set(volume, hi);
      const value = aggregate(
        item.aggregation,
        series.slice(lo, hi).map((s) => s.value),
      );
      if (value !== undefined) values.push(value);
    }
    if (values.length === 0) continue;
    const worst = item.op === 'gt' ? values.reduce((a, b) => Math.max(a, b)) : values.reduce((a, b) => Math.min(a, b));
    const { next, transition } = step(state, metricObservation(item, new Date(at), worst), item.pendingSeconds);
    state = { ...state, ...next };
    if (transition) steps.push({ at, value: worst, transition, state });
  }
  return { state, steps };
}
