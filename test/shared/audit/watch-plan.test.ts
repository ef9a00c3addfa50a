import { describe, expect, it } from 'vitest';
import {
  defaultWatchSettings,
  measuredRowsPerSecond,
  planIntegrityWatch,
  type SeqRange,
  type WatchedChain,
  watchDay,
} from '#shared/audit/watch-plan.ts';

const dayMs = 24 * 60 * 60 * 1000;
const runAt = new Date('2026-11-27T03:00:00Z');
const rowsPerDay = Math.ceil(100_000_000 / 365);

/** The rows of these ranges, a range up to the head (last null) ending at `head`. */
const rowsOf = (ranges: readonly SeqRange[], head: number) =>
  ranges.reduce((sum, r) => sum + (r.last ?? head) - r.first + 1, 0);

/** Every position of each chain verified on one of `days` consecutive days (each day's run and jobs). */
function coverage(chains: WatchedChain[], days: number) {
  const seen = new Map<string, [number, number][]>(chains.map((c) => [c.orgId, []]));
  const head = new Map(chains.map((c) => [c.orgId, c.head]));
  for (let d = 0; d < days; d += 1) {
    const plan = planIntegrityWatch(chains, new Date(runAt.getTime() + d * dayMs), defaultWatchSettings);
    for (const chain of plan.chains)
      for (const r of chain.ranges) seen.get(chain.orgId)!.push([r.first, r.last ?? head.get(chain.orgId)!]);
    for (const job of plan.jobs) for (const r of job.ranges) seen.get(job.orgId)!.push([r.first, r.last]);
  }
  return chains.every((c) => {
    let reached = c.start - 1;
    for (const [first, last] of seen.get(c.orgId)!.sort((x, y) => x[0] - y[0])) {
      if (first > reached + 1) return false;
      reached = Math.max(reached, last);
    }
    return reached >= c.head;
  });
}

describe('planning the integrity watch', () => {
  it('verifies every retained row in the run while all of it fits the run at the measured rate', () => {
    const chains = [{ orgId: 'a', start: 1, head: 1_000_000, anchored: 990_000 }];
    const plan = planIntegrityWatch(chains, runAt, defaultWatchSettings);
    expect(plan).toMatchObject({ full: true, runRows: 1_000_000, jobs: [] });
    expect(plan.chains).toEqual([{ orgId: 'a', full: true, ranges: [{ first: 1, last: null }], rows: 1_000_000 }]);
  });

  it('fits 100 million rows of one organization in the daily run, by the measured rate, re-verifying all in 7 days', () => {
    const head = 100_000_000;
    const chains = [{ orgId: 'a', start: 1, head, anchored: head - rowsPerDay }];
    const plan = planIntegrityWatch(chains, runAt, defaultWatchSettings);
    expect(plan.full).toBe(false);
    // New rows (a day's) plus a seventh of the rest, at the rate the benchmark measured at its slowest.
    expect(plan.runRows).toBe(rowsOf(plan.chains[0]!.ranges, head));
    expect(plan.runRows).toBeLessThan(head / 7 + rowsPerDay + defaultWatchSettings.stripeRows);
    expect(plan.runRows / measuredRowsPerSecond).toBeLessThanOrEqual(defaultWatchSettings.runSeconds);
    expect(defaultWatchSettings.runSeconds).toBeLessThan(15 * 60);
    expect(plan.jobs).toEqual([]);
    expect(coverage(chains, defaultWatchSettings.reverifyDays)).toBe(true);
    // At the rate measured here on a machine at load 13 (docs/benchmarks.md: 200,000 rows in 9.8-13.5 s), the day's
    // stripes go to jobs, each within one more 15-minute run.
    const slow = { ...defaultWatchSettings, rowsPerSecond: 15_000 };
    const slowPlan = planIntegrityWatch(chains, runAt, slow);
    expect(slowPlan.runSeconds).toBeLessThanOrEqual(slow.runSeconds);
    expect(slowPlan.jobs.length).toBeGreaterThan(0);
    for (const job of slowPlan.jobs) expect(job.rows / slow.rowsPerSecond).toBeLessThanOrEqual(slow.jobSeconds);
    expect(slowPlan.runRows + slowPlan.jobs.reduce((sum, job) => sum + job.rows, 0)).toBe(plan.runRows);
  });

  it('fits 100 million rows over 1,000 organizations the same way', () => {
    const chains = Array.from({ length: 1_000 }, (_, i) => ({
      orgId: `org-${String(i).padStart(4, '0')}`,
      start: 1,
      head: 100_000,
      anchored: 100_000 - Math.ceil(rowsPerDay / 1_000),
    }));
    const plan = planIntegrityWatch(chains, runAt, defaultWatchSettings);
    expect(plan.full).toBe(false);
    expect(plan.runSeconds).toBeLessThanOrEqual(defaultWatchSettings.runSeconds);
    expect(coverage(chains, defaultWatchSettings.reverifyDays)).toBe(true);
  });

  it("fans the day's older rows out to jobs of one organization within the worker's time when the run has none left", () => {
    const head = 400_000_000;
    const chains = [
      { orgId: 'a', start: 1, head, anchored: head - rowsPerDay },
      { orgId: 'b', start: 50_000_001, head, anchored: head - rowsPerDay },
    ];
    const plan = planIntegrityWatch(chains, runAt, defaultWatchSettings);
    expect(plan.runSeconds).toBeLessThanOrEqual(defaultWatchSettings.runSeconds);
    expect(plan.jobs.length).toBeGreaterThan(0);
    const jobRows = defaultWatchSettings.jobSeconds * measuredRowsPerSecond;
    for (const job of plan.jobs) {
      expect(job.rows).toBeLessThanOrEqual(jobRows);
      expect(job.rows).toBe(rowsOf(job.ranges, head));
    }
    expect(coverage(chains, defaultWatchSettings.reverifyDays)).toBe(true);
  });

  it('picks the stripes by the day of the run, and an anchor run between daily runs verifies new rows only', () => {
    const chains = [{ orgId: 'a', start: 1, head: 10, anchored: 8 }];
    const settings = { ...defaultWatchSettings, reverifyDays: 3, stripeRows: 2, runSeconds: 0 };
    const day = watchDay(runAt);
    const at = (d: number) => new Date((day - (day % 3) + d) * dayMs);
    expect(planIntegrityWatch(chains, at(0), settings).jobs).toEqual([
      {
        orgId: 'a',
        ranges: [
          { first: 1, last: 2 },
          { first: 7, last: 8 },
        ],
        rows: 4,
      },
    ]);
    expect(planIntegrityWatch(chains, at(1), settings).jobs).toEqual([
      { orgId: 'a', ranges: [{ first: 3, last: 4 }], rows: 2 },
    ]);
    const between = planIntegrityWatch(chains, at(1), settings, { stripes: false });
    expect(between.jobs).toEqual([]);
    expect(between.chains).toEqual([{ orgId: 'a', full: false, ranges: [{ first: 9, last: null }], rows: 2 }]);
  });
});
