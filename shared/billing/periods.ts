/**
 * Calendar dates (`YYYY-MM-DD`, a day in the contract's billing time zone) and billing periods. A period k starts
 * k × interval months after the contract's start, clamped to the month's last day, always computed from the start
 * date itself: a contract starting Jan 31 has periods from Jan 31, Feb 28 (29 in a leap year), Mar 31, Apr 30, …
 * and never drifts to the 28th.
 */

const dayMs = 86_400_000;

/** Days since 1970-01-01 of a calendar date. */
export const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / dayMs;

export const dateOf = (day: number): string => new Date(day * dayMs).toISOString().slice(0, 10);

export const addDays = (date: string, days: number): string => dateOf(dayNumber(date) + days);

export const daysBetween = (from: string, to: string): number => dayNumber(to) - dayNumber(from);

/** Whether a text is a real calendar date in YYYY-MM-DD form (2026-02-30 is not). */
export function isCalendarDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const parsed = Date.parse(`${text}T00:00:00Z`);
  return !Number.isNaN(parsed) && dateOf(parsed / dayMs) === text;
}

/** The date `months` months after `date`, on the same day of the month or the month's last day when it has fewer. */
export function addMonthsClamped(date: string, months: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const index = y * 12 + (m - 1) + months;
  const year = Math.floor(index / 12);
  const month = index - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return dateOf(Date.UTC(year, month, Math.min(d, lastDay)) / dayMs);
}

export interface Period {
  /** The period's first day. */
  start: string;
  /** The day after its last day. */
  end: string;
  /** Its number from the contract's start, 0 first. */
  index: number;
}

export function periodAt(startDate: string, intervalMonths: number, index: number): Period {
  return {
    start: addMonthsClamped(startDate, index * intervalMonths),
    end: addMonthsClamped(startDate, (index + 1) * intervalMonths),
    index,
  };
}

/** The period holding a day (periods before the start count backwards from it). */
export function periodContaining(startDate: string, intervalMonths: number, day: string): Period {
  const [y0, m0] = startDate.split('-').map(Number) as [number, number];
  const [y, m] = day.split('-').map(Number) as [number, number];
  let index = Math.floor(((y - y0) * 12 + (m - m0)) / intervalMonths);
  while (periodAt(startDate, intervalMonths, index).start > day) index -= 1;
  while (periodAt(startDate, intervalMonths, index + 1).start <= day) index += 1;
  return periodAt(startDate, intervalMonths, index);
}

/** The period starting on this day, or undefined when none of the contract's periods does. */
export function periodStartingOn(startDate: string, intervalMonths: number, day: string): Period | undefined {
  const period = periodContaining(startDate, intervalMonths, day);
  return period.start === day && period.index >= 0 ? period : undefined;
}

/** A set of days as sorted, disjoint half-open ranges [from, to) of dates. */
export type DayRanges = { from: string; to: string }[];

/** The days of a period the contract bills: within its start and end date, outside its pauses. */
export function billableDays(
  period: Period,
  contract: { startDate: string; endDate: string | null },
  pauses: { pausedOn: string; resumedOn: string | null }[],
): DayRanges {
  const from = period.start > contract.startDate ? period.start : contract.startDate;
  const afterEnd = contract.endDate ? addDays(contract.endDate, 1) : period.end;
  let ranges: DayRanges = [{ from, to: afterEnd < period.end ? afterEnd : period.end }].filter((r) => r.from < r.to);
  for (const pause of pauses) {
    const resumed = pause.resumedOn ?? '9999-12-31';
    ranges = ranges.flatMap((r) =>
      [
        { from: r.from, to: pause.pausedOn < r.to ? pause.pausedOn : r.to },
        { from: resumed > r.from ? resumed : r.from, to: r.to },
      ].filter((part) => part.from < part.to),
    );
  }
  return ranges;
}

export const countDays = (ranges: DayRanges): number => ranges.reduce((sum, r) => sum + daysBetween(r.from, r.to), 0);

/** How many days of the ranges fall within [from, to). */
export function overlapDays(ranges: DayRanges, from: string, to: string): number {
  let days = 0;
  for (const r of ranges) {
    const a = r.from > from ? r.from : from;
    const b = r.to < to ? r.to : to;
    if (a < b) days += daysBetween(a, b);
  }
  return days;
}
