/** How the benchmarks read their arguments, word their figures and show what they are doing. */
import { availableParallelism, cpus, loadavg } from 'node:os';
import { formatTable } from './table.ts';

/** A positive integer option (`_` allowed as a digit separator), or an error naming the option. */
export function positive(name: string, text: unknown): number {
  const n = Number(String(text).replaceAll('_', ''));
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} takes a positive integer, not ${String(text)}`);
  return n;
}

export const number = (n: number) => Math.round(n).toLocaleString('en-US');
export const ms = (n: number) => `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`;
export const ratio = (r: number) => `${r < 1 ? r.toFixed(2) : r.toFixed(1)}x`;
export const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');
/** The 1-minute load average: other work on the machine moves every figure. */
export const loadAverage = () => loadavg()[0]!.toFixed(1);

/**
 * CPU seconds spent so far: the machine's (every process on every core, busy time) and this process's. Their
 * difference over a stretch of a run is what the database server (and anything else running) used meanwhile.
 */
export function cpuSeconds(): { machine: number; process: number } {
  const machine = cpus().reduce((sum, { times }) => sum + times.user + times.nice + times.sys + times.irq, 0);
  const own = process.cpuUsage();
  return { machine: machine / 1000, process: (own.user + own.system) / 1e6 };
}

/** What the bench is doing, on stderr: rewritten in place on a terminal; elsewhere one line per phase, no counters. */
export function status(line: string, counter = false): void {
  if (process.stderr.isTTY) process.stderr.write(`\r${line}\x1b[K`);
  else if (!counter) process.stderr.write(`${line}\n`);
}
export const statusDone = () => process.stderr.isTTY && process.stderr.write('\r\x1b[K');

/**
 * A benchmark's report: what ran and where, the machine's load at the start and the end, each figure beside its
 * baseline of the same run, and how long the run took (`started`: its performance.now()).
 */
export function benchReport(report: {
  name: string;
  server: string;
  loadAtStart: string;
  started: number;
  lines: string[][];
}): string {
  return `
Logbook ${report.name} benchmark (${new Date().toISOString().slice(0, 16)}Z): ${report.server};
${availableParallelism()} CPUs shared by the server, this client and other work on the machine,
load average ${report.loadAtStart} at the start and ${loadAverage()} at the end.

${formatTable(['', 'figure', 'baseline (same run)', 'ratio', 'target', ''], report.lines)}

Done in ${((performance.now() - report.started) / 1000 / 60).toFixed(1)} min.`;
}
