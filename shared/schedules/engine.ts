/**
 * The one schedule engine: RFC 5545 recurrences (RRULE, DTSTART in local time, EXDATE) in an IANA time zone.
 *
 * The recurrence is expanded in local wall time (a floating date-time, computed on a zone without offsets by
 * rrule-temporal), so the rule decides which local dates and times exist in the set: a day a month does not have (the
 * 30th of February, the 31st of April) is skipped and not counted, as RFC 5545 says. Each local date-time is then
 * placed in the zone as a DATE-TIME with TZID is read: a time that happens twice (fall back) is the first of the two,
 * a time that does not exist (spring forward) is read with the offset before the gap (Temporal's `compatible`
 * disambiguation), so 02:30 on a day whose clocks jump from 02:00 to 03:00 runs at 03:30 local, and never not at all.
 * The occurrence's key is its local date-time: the same wall time is one occurrence, however often the clock shows it.
 */
import { RRuleTemporal } from 'rrule-temporal';
import { Temporal } from 'temporal-polyfill';

/** A schedule as stored and as clients give it. */
export interface Schedule {
  /** RFC 5545 recurrence rule without the `RRULE:` prefix; absent for a one-off. */
  rrule?: string | null;
  /** DTSTART: a local date-time without offset (`2027-03-21T02:30:00`). */
  start: string;
  /** IANA time zone name. */
  timezone: string;
  /** EXDATEs: local date-times of the recurrence left out. */
  exdates?: string[] | null;
}

export interface Occurrence {
  /** The local date-time the rule names: the occurrence's key within its schedule. */
  key: string;
  /** The local date-time it runs at (differs from the key inside a spring-forward gap), with its offset. */
  local: string;
  /** The instant, in UTC. */
  utc: string;
  at: Date;
}

/** Frequencies a schedule may use: nothing runs more often than hourly. */
export const frequencies = ['YEARLY', 'MONTHLY', 'WEEKLY', 'DAILY', 'HOURLY'] as const;

/** The parts of an RRULE value (RFC 5545). */
const ruleParts = [
  'FREQ',
  'UNTIL',
  'COUNT',
  'INTERVAL',
  'BYSECOND',
  'BYMINUTE',
  'BYHOUR',
  'BYDAY',
  'BYMONTHDAY',
  'BYYEARDAY',
  'BYWEEKNO',
  'BYMONTH',
  'BYSETPOS',
  'WKST',
];

/** The widest UTC offset there is (+14:00, -12:00): local windows are widened by it before they are narrowed. */
const offsetSlackMs = 15 * 3600_000;

/** A problem with a schedule's text: the field it names and why. */
export class ScheduleProblem extends Error {
  constructor(
    readonly field: 'rrule' | 'start' | 'timezone' | 'exdates',
    message: string,
  ) {
    super(message);
  }
}

const zoneNames = new Map<string, string | undefined>();

/** The canonical IANA name of a zone, or undefined when there is no such zone (offsets are no zone names). */
export function canonicalZone(zone: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(zone) || !zone.includes('/')) return zone === 'UTC' ? 'UTC' : undefined;
  if (zoneNames.has(zone)) return zoneNames.get(zone);
  let canonical: string | undefined;
  try {
    canonical = Temporal.ZonedDateTime.from({ year: 2000, month: 1, day: 1, timeZone: zone }).timeZoneId;
  } catch {
    canonical = undefined;
  }
  if (zoneNames.size < 10_000) zoneNames.set(zone, canonical);
  return canonical;
}

/** The numeric parts of an RRULE and their ranges (RFC 5545): a value outside is refused, not silently matched never. */
const numericParts: Record<string, { min: number; max: number; signed?: true; list?: true }> = {
  COUNT: { min: 1, max: 1_000_000 },
  INTERVAL: { min: 1, max: 10_000 },
  BYSECOND: { min: 0, max: 60, list: true },
  BYMINUTE: { min: 0, max: 59, list: true },
  BYHOUR: { min: 0, max: 23, list: true },
  BYMONTHDAY: { min: 1, max: 31, signed: true, list: true },
  BYYEARDAY: { min: 1, max: 366, signed: true, list: true },
  BYWEEKNO: { min: 1, max: 53, signed: true, list: true },
  BYMONTH: { min: 1, max: 12, list: true },
  BYSETPOS: { min: 1, max: 366, signed: true, list: true },
};

function numericProblem(part: string): string | undefined {
  const [name, value = ''] = part.split('=') as [string, string?];
  const range = numericParts[name.toUpperCase()];
  if (!range) return undefined;
  const values = range.list ? value.split(',') : [value];
  for (const each of values) {
    if (!/^[+-]?\d{1,7}$/.test(each) || (!range.signed && /^[+-]/.test(each)))
      return `${name} takes whole numbers: ${value}`;
    const n = Math.abs(Number(each));
    if (n < range.min || n > range.max)
      return `${name} ${each} is outside ${range.signed ? '±' : ''}${range.min}–${range.max}`;
  }
  return undefined;
}

/**
 * A local date-time (`YYYY-MM-DDTHH:MM[:SS]`, no offset) as its wall time held as if it were UTC, or undefined when
 * the text is no such date-time or names a day or time that does not exist (the 30th of February, 24:00).
 */
export function localWall(text: string): number | undefined {
  const parts = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!parts) return undefined;
  const [year, month, day, hour, minute, second = 0] = parts.slice(1).map(Number) as number[];
  const wall = Date.UTC(year!, month! - 1, day!, hour!, minute!, second);
  // Date.UTC carries overflowing fields into the next ones: the text is real when nothing was carried.
  const back = new Date(wall);
  return back.getUTCFullYear() === year &&
    back.getUTCMonth() === month! - 1 &&
    back.getUTCDate() === day &&
    back.getUTCHours() === hour &&
    back.getUTCMinutes() === minute &&
    back.getUTCSeconds() === second
    ? wall
    : undefined;
}

/** Whether the text is a local date-time without offset that exists on the calendar. */
export const plainDateTime = (text: string): boolean => localWall(text) !== undefined;

/** A wall time as an RFC 5545 floating-in-UTC DATE-TIME value (`20270321T023000Z`), as the rule reads it. */
const ruleStamp = (wall: number) => `${new Date(wall).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;

/** A compiled schedule: its rule over floating local time and its zone. */
export interface CompiledSchedule {
  zone: string;
  /** DTSTART's wall time, held as if it were UTC. */
  start: number;
  rule: RRuleTemporal | undefined;
}

/** Checks and compiles a schedule; throws ScheduleProblem naming the field at fault. */
export function compileSchedule(schedule: Schedule): CompiledSchedule {
  const zone = canonicalZone(schedule.timezone);
  if (!zone) throw new ScheduleProblem('timezone', 'Unknown time zone; give an IANA name such as Europe/Berlin');
  const start = localWall(schedule.start);
  if (start === undefined)
    throw new ScheduleProblem('start', 'Give a local date-time without offset, e.g. 2027-03-21T02:30:00');
  const exdates = (schedule.exdates ?? []).map((text) => {
    const local = localWall(text);
    if (local === undefined) throw new ScheduleProblem('exdates', `Not a local date-time without offset: ${text}`);
    return ruleStamp(local);
  });
  if (!schedule.rrule) return { zone, start, rule: undefined };
  const text = schedule.rrule.trim();
  if (/^RRULE:/i.test(text) || /[\r\n]/.test(text))
    throw new ScheduleProblem('rrule', 'Give the rule without the RRULE: prefix, on one line');
  const unknown = text.split(';').find((part) => !ruleParts.includes(part.split('=')[0]!.toUpperCase()));
  if (unknown !== undefined) throw new ScheduleProblem('rrule', `Not a recurrence rule part: ${unknown}`);
  const outOfRange = text.split(';').map(numericProblem).find(Boolean);
  if (outOfRange) throw new ScheduleProblem('rrule', outOfRange);
  const freq = /(?:^|;)FREQ=([A-Z]+)/i.exec(text)?.[1]?.toUpperCase();
  if (!freq || !(frequencies as readonly string[]).includes(freq))
    throw new ScheduleProblem('rrule', `FREQ must be one of ${frequencies.join(', ')}`);
  if (/(?:^|;)UNTIL=[^;]*Z/i.test(text) === false && /(?:^|;)UNTIL=/i.test(text))
    throw new ScheduleProblem('rrule', 'UNTIL is a UTC date-time ending in Z');
  let rule: RRuleTemporal;
  try {
    // DTSTART and EXDATE go in the rule's text as UTC values, so the library reads them into its own date-times
    // without a conversion from another Temporal implementation.
    const lines = [`DTSTART:${ruleStamp(start)}`, `RRULE:${untilAsFloating(text, zone)}`];
    if (exdates.length > 0) lines.push(`EXDATE:${exdates.join(',')}`);
    rule = new RRuleTemporal({ rruleString: lines.join('\n') });
  } catch (error) {
    throw new ScheduleProblem('rrule', `Not a recurrence rule: ${(error as Error).message}`);
  }
  return { zone, start, rule };
}

/** UNTIL is an instant (UTC); the rule runs on floating local time, so it becomes the local time of that instant. */
function untilAsFloating(text: string, zone: string): string {
  return text.replace(/UNTIL=(\d{8}T\d{6})Z/i, (_, stamp: string) => {
    const instant = Temporal.Instant.from(
      `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}Z`,
    );
    const local = instant.toZonedDateTimeISO(zone).toPlainDateTime();
    return `UNTIL=${local.toString({ smallestUnit: 'second' }).replace(/[-:]/g, '')}Z`;
  });
}

const dayMs = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();
/** Per zone, its UTC offset (ms) at the start of each UTC day asked for: few days and zones are asked for. */
const dayOffsets = new Map<string, Map<number, number>>();
let cachedDays = 0;

/** The zone's UTC offset at an instant, from the runtime's time-zone data (ICU). */
function exactOffset(zone: string, at: number): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(at)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - Math.floor(at / 1000) * 1000;
}

function dayOffset(zone: string, day: number): number {
  let days = dayOffsets.get(zone);
  if (!days) {
    days = new Map();
    dayOffsets.set(zone, days);
  }
  let offset = days.get(day);
  if (offset === undefined) {
    if (cachedDays > 200_000) {
      dayOffsets.clear();
      cachedDays = 0;
      days = new Map();
      dayOffsets.set(zone, days);
    }
    offset = exactOffset(zone, day * dayMs);
    days.set(day, offset);
    cachedDays++;
  }
  return offset;
}

/**
 * The zone's offset at an instant: the offset of its UTC day when the day has no transition (the same offset at its
 * start and at the next day's), read exactly on the rare days that have one (no zone changes twice in a day).
 */
function offsetAt(zone: string, at: number): number {
  const day = Math.floor(at / dayMs);
  const start = dayOffset(zone, day);
  return start === dayOffset(zone, day + 1) ? start : exactOffset(zone, at);
}

const pad = (n: number) => String(n).padStart(2, '0');
const twoDigits = Array.from({ length: 60 }, (_, n) => pad(n));
/** `YYYY-MM-DD` per day number: occurrences fall on few distinct days, and formatting is most of placing them. */
const dayTexts = new Map<number, string>();

/** `YYYY-MM-DDTHH:MM:SS` of an instant, or of a wall time held as if it were UTC. */
function secondsText(ms: number): string {
  const day = Math.floor(ms / dayMs);
  let date = dayTexts.get(day);
  if (date === undefined) {
    if (dayTexts.size >= 100_000) dayTexts.clear();
    date = new Date(day * dayMs).toISOString().slice(0, 10);
    dayTexts.set(day, date);
  }
  const second = Math.floor((ms - day * dayMs) / 1000);
  return `${date}T${twoDigits[Math.floor(second / 3600)]}:${twoDigits[Math.floor(second / 60) % 60]}:${twoDigits[second % 60]}`;
}

const offsetTexts = new Map<number, string>();
const offsetText = (offset: number) => {
  let text = offsetTexts.get(offset);
  if (text === undefined) {
    const minutes = Math.abs(offset) / 60_000;
    text = `${offset < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
    offsetTexts.set(offset, text);
  }
  return text;
};

/** Per zone, per UTC day: the zone's offset when no transition is near the day (see steadyOffset), else NaN. */
const steadyDays = new Map<string, Map<number, number>>();
let steadyCount = 0;

/** The map of a zone's steady days, read once per schedule rather than once per occurrence. */
function steadyDaysOf(zone: string): Map<number, number> {
  let days = steadyDays.get(zone);
  if (!days || steadyCount > 200_000) {
    if (steadyCount > 200_000) {
      steadyDays.clear();
      steadyCount = 0;
    }
    days = new Map();
    steadyDays.set(zone, days);
  }
  return days;
}

/**
 * The offset of a wall time's UTC day when it is the same at the start of the day before through the start of the
 * second day after (no transition near, the common case), else NaN: one lookup per occurrence once the day is known.
 */
function steadyOffset(days: Map<number, number>, zone: string, day: number): number {
  let offset = days.get(day);
  if (offset === undefined) {
    const start = dayOffset(zone, day);
    offset =
      start === dayOffset(zone, day - 1) && start === dayOffset(zone, day + 1) && start === dayOffset(zone, day + 2)
        ? start
        : Number.NaN;
    days.set(day, offset);
    steadyCount++;
  }
  return offset;
}

/**
 * Places a local date-time of the recurrence (its wall time held as if it were UTC) in its zone as RFC 5545 reads a
 * DATE-TIME with TZID: of two instants showing it (fall back) the first; in a gap (spring forward) the instant the
 * offset before the gap gives, which the clock shows later by the gap's length. The same rule as Temporal's
 * `compatible` disambiguation, computed from the offsets around it.
 */
function place(wall: number, zone: string, days = steadyDaysOf(zone)): Occurrence {
  const steady = steadyOffset(days, zone, Math.floor(wall / dayMs));
  // The common case, with the same answer as the reading below: no transition is near.
  if (!Number.isNaN(steady)) return placed(wall, wall - steady, steady);
  return placeNearTransition(wall, zone);
}

function placeNearTransition(wall: number, zone: string): Occurrence {
  const before = offsetAt(zone, wall - dayMs);
  const after = offsetAt(zone, wall + dayMs);
  let at = wall - before;
  if (before !== after) {
    const showsWall = (instant: number) => offsetAt(zone, instant) === wall - instant;
    const candidates = [wall - before, wall - after].filter(showsWall);
    // None: a gap, read with the offset before it. Two: a repeat, the first.
    if (candidates.length > 0) at = Math.min(...candidates);
  }
  return placed(wall, at, offsetAt(zone, at));
}

function placed(wall: number, at: number, offset: number): Occurrence {
  const key = secondsText(wall);
  // Whole seconds (every rule's times are) need no millisecond formatting; anything else goes the long way.
  const utc = at % 1000 === 0 ? `${secondsText(at)}.000Z` : new Date(at).toISOString();
  return {
    key,
    local: `${at + offset === wall ? key : secondsText(at + offset)}${offsetText(offset)}`,
    utc,
    at: new Date(at),
  };
}

/** The first `count` occurrences from DTSTART on. */
export function firstOccurrences(schedule: CompiledSchedule, count: number): Occurrence[] {
  if (!schedule.rule) return count > 0 ? [place(schedule.start, schedule.zone)] : [];
  return schedule.rule.all((_, index) => index < count).map((each) => place(each.epochMilliseconds, schedule.zone));
}

/** Occurrences whose instant is in [from, to), at most `limit`, in order. */
export function occurrencesBetween(schedule: CompiledSchedule, from: Date, to: Date, limit: number): Occurrence[] {
  if (!schedule.rule) {
    const only = place(schedule.start, schedule.zone);
    return only.at >= from && only.at < to && limit > 0 ? [only] : [];
  }
  // The rule's instants are local wall times read as UTC: widen by the largest offset, then keep the real instants.
  const candidates = schedule.rule.between(
    new Date(from.getTime() - offsetSlackMs),
    new Date(to.getTime() + offsetSlackMs),
    true,
  );
  const found: Occurrence[] = [];
  const fromMs = from.getTime();
  const toMs = to.getTime();
  const days = steadyDaysOf(schedule.zone);
  for (const candidate of candidates) {
    const wall = candidate.epochMilliseconds;
    // Most candidates are placed by their day's steady offset: those outside the window are dropped before any text
    // is made for them.
    const steady = steadyOffset(days, schedule.zone, Math.floor(wall / dayMs));
    if (!Number.isNaN(steady) && (wall - steady < fromMs || wall - steady >= toMs)) continue;
    const occurrence = !Number.isNaN(steady)
      ? placed(wall, wall - steady, steady)
      : placeNearTransition(wall, schedule.zone);
    if (occurrence.at < from || occurrence.at >= to) continue;
    found.push(occurrence);
    if (found.length >= limit) break;
  }
  return found;
}

/** The next occurrence at or after `after`, looking ahead in growing steps; undefined when the rule has ended. */
export function nextOccurrence(schedule: CompiledSchedule, after: Date): Occurrence | undefined {
  if (!schedule.rule) {
    const only = place(schedule.start, schedule.zone);
    return only.at >= after ? only : undefined;
  }
  for (const days of [2, 40, 400, 4000]) {
    const [next] = occurrencesBetween(schedule, after, new Date(after.getTime() + days * 86_400_000), 1);
    if (next) return next;
  }
  return undefined;
}

/** The occurrence in progress at `at` for a window of `durationMinutes` (the latest that started and has not ended). */
export function occurrenceInProgress(
  schedule: CompiledSchedule,
  at: Date,
  durationMinutes: number,
): Occurrence | undefined {
  const started = occurrencesBetween(
    schedule,
    new Date(at.getTime() - durationMinutes * 60_000 + 1),
    new Date(at.getTime() + 1),
    1000,
  );
  return started.at(-1);
}
