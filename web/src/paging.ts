import type { AuditPagination } from '../../shared/audit/schemas.ts';

const numberFormat = new Intl.NumberFormat();

/** A number of rows or pages as the reader's locale writes it: 3,214. */
export const count = (n: number) => numberFormat.format(n);

/**
 * "Rows 51–100 of 3,214"; when the total is only a lower bound, "of at least 1,000" (a capped count) or, when
 * nothing was counted (skipCount), whether more follow.
 */
export function rowsSummary(pagination: AuditPagination, shown: number): string {
  if (shown === 0)
    return pagination.page > 1 ? 'No entries on this page: go back to the first page.' : 'No entries match this view.';
  const { totalExact: exact, hasMore: hasNext } = pagination;
  const first = (pagination.page - 1) * pagination.limit + 1;
  const last = first + shown - 1;
  const range = `Rows ${count(first)}–${count(last)}`;
  if (exact) return `${range} of ${count(pagination.total)}`;
  if (pagination.total > last + 1) return `${range} of at least ${count(pagination.total)}`;
  return hasNext ? `${range}, more follow` : `${range}, no more`;
}
