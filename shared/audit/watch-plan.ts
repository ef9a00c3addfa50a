/**
 * What the daily integrity watch verifies, planned before it reads a row (docs/audit.md "The integrity watch at
 * scale"), pure: from each organization's retained chain (its first retained position, its head, its newest anchor)
 * and the verification rate, the rows verified today and where (in this run, or in jobs of the work queue).
 *
 * While every retained row of every organization fits one run at the measured rate, every row is verified every day
 * (the watch as it always was). Past that, the watch is incremental: each day it verifies every row written since the
 * organization's newest anchor (the rows the anchor of today will sign) plus the day's stripes of the older rows.
 * A stripe is `stripeRows` consecutive positions (stripe k: positions k·stripeRows+1 … (k+1)·stripeRows); stripe k is
 * verified on the days whose number (days since 1970-01-01 UTC) is k modulo `reverifyDays`. A position's stripe never
 * changes, so every retained row is verified again within `reverifyDays` days, however the chain grows or is cut.
 * The run verifies the new rows first, then stripes while its time budget lasts; the stripes left are queued
 * (shared/queue), in jobs of one organization each sized to one more run of the retention worker.
 */

/** An organization's retained chain as the watch finds it. */
export interface WatchedChain {
  orgId: string;
  /** The first position retained (after the latest retention checkpoint). */
  start: number;
  /** The head's position (0: no head). */
  head: number;
  /** The position the newest anchor signed (null: never anchored): every row up to it was verified then. */
  anchored: number | null;
}

/** Positions first…last of one organization's chain; `last` null: up to the head read when it is verified. */
export interface SeqRange {
  first: number;
  last: number | null;
}

export interface WatchSettings {
  /** Every retained row is verified again within this many days (default 7). */
  reverifyDays: number;
  /** Positions per stripe of older rows. */
  stripeRows: number;
  /** The verification rate the plan counts on, rows per second (docs/benchmarks.md). */
  rowsPerSecond: number;
  /** What the daily run may spend verifying, seconds (Lambda's 15 minutes less the pruning and a margin). */
  runSeconds: number;
  /** What one job of older rows may spend verifying, seconds (the retention worker's 15 minutes less a margin). */
  jobSeconds: number;
}

/**
 * The verification rate measured by `npm run bench:audit` at its slowest (docs/benchmarks.md: 1,000,000 rows in 24 s
 * on a loaded 2-core machine), rounded down: the plan counts on the slow end.
 */
export const measuredRowsPerSecond = 40_000;

export const defaultWatchSettings: WatchSettings = {
  reverifyDays: 7,
  stripeRows: 250_000,
  rowsPerSecond: measuredRowsPerSecond,
  // 15 minutes less 3 for the pruning before it and the anchors after.
  runSeconds: 720,
  // A job runs in the retention worker, from its own queue: 15 minutes less 3.
  jobSeconds: 720,
};

/** What the watch does for one organization in this run. */
export interface ChainPlan {
  orgId: string;
  /** Every retained row (the watch as it always was), checked for unsealed entries too. */
  full: boolean;
  /** Ranges verified in this run, in order; the first of an incremental plan is the new rows up to the head. */
  ranges: SeqRange[];
  /** Rows those ranges hold (as far as the plan knows the head). */
  rows: number;
}

/** Older rows of one organization verified by a job of the work queue. */
export interface StripeJob {
  orgId: string;
  ranges: { first: number; last: number }[];
  rows: number;
}

export interface WatchPlan {
  /** Whether every retained row is verified today (all of it fits the run). */
  full: boolean;
  /** Retained rows over all organizations. */
  retainedRows: number;
  chains: ChainPlan[];
  /** Rows verified in this run, and the seconds that takes at the plan's rate. */
  runRows: number;
  runSeconds: number;
  jobs: StripeJob[];
}

const dayMs = 24 * 60 * 60 * 1000;

/** Days since 1970-01-01 UTC: what picks the day's stripes. */
export function watchDay(runAt: Date): number {
  return Math.floor(runAt.getTime() / dayMs);
}

const rowsIn = (range: { first: number; last: number }) => Math.max(0, range.last - range.first + 1);

/** The older rows (start … through) of the stripes due on `day`, as ranges in seq order. */
export function dueStripes(
  start: number,
  through: number,
  day: number,
  settings: Pick<WatchSettings, 'reverifyDays' | 'stripeRows'>,
): { first: number; last: number }[] {
  const { stripeRows, reverifyDays } = settings;
  const ranges: { first: number; last: number }[] = [];
  if (through < start) return ranges;
  const due = ((day % reverifyDays) + reverifyDays) % reverifyDays;
  for (let stripe = Math.floor((start - 1) / stripeRows); stripe * stripeRows < through; stripe += 1) {
    if (stripe % reverifyDays !== due) continue;
    const first = Math.max(start, stripe * stripeRows + 1);
    const last = Math.min(through, (stripe + 1) * stripeRows);
    const previous = ranges.at(-1);
    // Every stripe is due when reverifyDays is 1: adjacent stripes are one range.
    if (previous && previous.last + 1 === first) previous.last = last;
    else ranges.push({ first, last });
  }
  return ranges;
}

/** Cuts ranges into pieces of at most `rows` rows each, in order. */
function cut(ranges: { first: number; last: number }[], rows: number): { first: number; last: number }[][] {
  const pieces: { first: number; last: number }[][] = [];
  let piece: { first: number; last: number }[] = [];
  let room = rows;
  for (const range of ranges) {
    let first = range.first;
    while (first <= range.last) {
      const last = Math.min(range.last, first + room - 1);
      piece.push({ first, last });
      room -= last - first + 1;
      first = last + 1;
      if (room === 0) {
        pieces.push(piece);
        piece = [];
        room = rows;
      }
    }
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/** The day's plan over these chains (sorted by organization id), run at `runAt`; `stripes: false`: new rows only. */
export function planIntegrityWatch(
  chains: readonly WatchedChain[],
  runAt: Date,
  settings: WatchSettings,
  options: { stripes?: boolean } = {},
): WatchPlan {
  const retained = (chain: WatchedChain) => Math.max(0, chain.head - chain.start + 1);
  const retainedRows = chains.reduce((sum, chain) => sum + retained(chain), 0);
  const runBudget = Math.floor(settings.runSeconds * settings.rowsPerSecond);
  const jobBudget = Math.max(1, Math.floor(settings.jobSeconds * settings.rowsPerSecond));

  if (retainedRows <= runBudget) {
    const full = chains.map((chain) => ({
      orgId: chain.orgId,
      full: true,
      ranges: [{ first: chain.start, last: null }],
      rows: retained(chain),
    }));
    return {
      full: true,
      retainedRows,
      chains: full,
      runRows: retainedRows,
      runSeconds: retainedRows / settings.rowsPerSecond,
      jobs: [],
    };
  }

  const day = watchDay(runAt);
  // New rows first, over every organization: today's anchors sign them.
  const plans: ChainPlan[] = chains.map((chain) => {
    // Never anchored, or anchored before what is retained: all of it is new to the watch.
    const verifiedThrough = chain.anchored === null || chain.anchored < chain.start ? chain.start - 1 : chain.anchored;
    const rows = Math.max(0, chain.head - verifiedThrough);
    return { orgId: chain.orgId, full: false, ranges: [{ first: verifiedThrough + 1, last: null }], rows };
  });
  let runRows = plans.reduce((sum, plan) => sum + plan.rows, 0);
  const jobs: StripeJob[] = [];
  chains.forEach((chain, i) => {
    const plan = plans[i]!;
    const through = plan.ranges[0]!.first - 1;
    // An anchor run between daily runs verifies the new rows only: the day's stripes are the daily run's.
    const stripes = options.stripes === false ? [] : dueStripes(chain.start, through, day, settings);
    const stripeRows = stripes.reduce((sum, range) => sum + rowsIn(range), 0);
    if (runRows + stripeRows <= runBudget) {
      plan.ranges.push(...stripes);
      plan.rows += stripeRows;
      runRows += stripeRows;
      return;
    }
    // The run's budget is spent: this organization's stripes go to the work queue, a job per worker's budget.
    for (const ranges of cut(stripes, jobBudget))
      jobs.push({ orgId: chain.orgId, ranges, rows: ranges.reduce((sum, range) => sum + rowsIn(range), 0) });
  });
  return {
    full: false,
    retainedRows,
    chains: plans,
    runRows,
    runSeconds: runRows / settings.rowsPerSecond,
    jobs,
  };
}
