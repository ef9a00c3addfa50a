/** How the benchmarks time what they measure. */

/** The median and 95th percentile of some timings (nearest rank). */
export function percentiles(times: number[]): { p50: number; p95: number } {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95) };
}

/** p50 and p95 of `runs` timed calls, after `warmups` untimed ones. */
export async function latency(
  call: () => Promise<unknown>,
  runs: number,
  warmups = 3,
): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < warmups; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  return percentiles(times);
}

/** One call, its time and its value. */
export async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await call();
  return { ms: performance.now() - started, value };
}

/** Runs `task` over `items`, `width` at a time. */
export async function pool<T>(
  items: T[],
  width: number,
  task: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) await task(items[i]!, i);
    }),
  );
}
