/** Helpers of the local operator commands (npm run audit:verify, npm run retention). */

/** Where a database is, without its credentials. */
export function location(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

/** A connection failure's message; node-postgres reports a refused dual-stack connect as an AggregateError without one. */
export const reason = (error: unknown): string =>
  error instanceof AggregateError && error.errors.length > 0
    ? error.errors.map(reason).join('; ')
    : error instanceof Error
      ? error.message || String((error as { code?: string }).code ?? error.name)
      : String(error);

export const count = (n: number) => n.toLocaleString('en-US');
export const rows = (n: number) => `${count(n)} row${n === 1 ? '' : 's'}`;

/**
 * A progress line on stderr: rewritten in place on a terminal, one line per update elsewhere (where it shows only
 * when asked for). Updates come at most 10 times a second; the final one always shows.
 */
export function progressLine(enabled: boolean) {
  const inPlace = process.stderr.isTTY === true;
  let shownAt = -Infinity;
  let shown = false;
  return {
    get shown() {
      return shown;
    },
    show(line: string, final: boolean) {
      if (!enabled) return;
      const now = performance.now();
      if (!final && now - shownAt < 100) return;
      shown = true;
      shownAt = now;
      process.stderr.write(inPlace ? `\r${line}\x1b[K` : `${line}\n`);
    },
    end() {
      if (shown && inPlace) process.stderr.write('\n');
    },
  };
}

/** A usage error, printed with the command's usage: exit status 2. */
export function usageError(usage: string, message: string): number {
  console.error(`usage error: ${message}\n\n${usage}`);
  return 2;
}

/** Runs a command and sets its exit status; an unexpected failure is status 2 (1 is kept for what it found). */
export function runCommand(main: () => Promise<number>, describeFailure: (error: unknown) => unknown = (e) => e) {
  main()
    .catch((error: unknown) => {
      console.error(describeFailure(error));
      return 2;
    })
    .then((status) => {
      process.exitCode = status;
    });
}
