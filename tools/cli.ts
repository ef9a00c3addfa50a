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
