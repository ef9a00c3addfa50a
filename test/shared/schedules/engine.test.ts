import { describe, expect, it } from 'vitest';
import {
  compileSchedule,
  firstOccurrences,
  nextOccurrence,
  occurrenceInProgress,
  occurrencesBetween,
  ScheduleProblem,
} from '#shared/schedules/engine.ts';

const keys = (list: { key: string }[]) => list.map((each) => each.key);
const days = (list: { key: string }[]) => list.map((each) => each.key.slice(0, 10));

/**
 * Both transitions of 2026 and 2027 in each zone: a daily rule at a local time inside the spring-forward gap runs at
 * that time read with the offset before the gap; one at a local time the fall-back repeats runs once, at the first.
 */
const transitions: { zone: string; day: string; time: string; local: string; utc: string }[] = [
  {
    zone: 'America/New_York',
    day: '2026-03-08',
    time: '02:30',
    local: '2026-03-08T03:30:00-04:00',
    utc: '2026-03-08T07:30:00.000Z',
  },
  {
    zone: 'America/New_York',
    day: '2026-11-01',
    time: '01:30',
    local: '2026-11-01T01:30:00-04:00',
    utc: '2026-11-01T05:30:00.000Z',
  },
  {
    zone: 'America/New_York',
    day: '2027-03-14',
    time: '02:30',
    local: '2027-03-14T03:30:00-04:00',
    utc: '2027-03-14T07:30:00.000Z',
  },
  {
    zone: 'America/New_York',
    day: '2027-11-07',
    time: '01:30',
    local: '2027-11-07T01:30:00-04:00',
    utc: '2027-11-07T05:30:00.000Z',
  },
  {
    zone: 'Europe/Berlin',
    day: '2026-03-29',
    time: '02:30',
    local: '2026-03-29T03:30:00+02:00',
    utc: '2026-03-29T01:30:00.000Z',
  },
  {
    zone: 'Europe/Berlin',
    day: '2026-10-25',
    time: '02:30',
    local: '2026-10-25T02:30:00+02:00',
    utc: '2026-10-25T00:30:00.000Z',
  },
  {
    zone: 'Europe/Berlin',
    day: '2027-03-28',
    time: '02:30',
    local: '2027-03-28T03:30:00+02:00',
    utc: '2027-03-28T01:30:00.000Z',
  },
  {
    zone: 'Europe/Berlin',
    day: '2027-10-31',
    time: '02:30',
    local: '2027-10-31T02:30:00+02:00',
    utc: '2027-10-31T00:30:00.000Z',
  },
  // Lord Howe moves its clocks by 30 minutes: 02:00 → 02:30 in October, 02:00 → 01:30 in April.
  {
    zone: 'Australia/Lord_Howe',
    day: '2026-10-04',
    time: '02:15',
    local: '2026-10-04T02:45:00+11:00',
    utc: '2026-10-03T15:45:00.000Z',
  },
  {
    zone: 'Australia/Lord_Howe',
    day: '2026-04-05',
    time: '01:45',
    local: '2026-04-05T01:45:00+11:00',
    utc: '2026-04-04T14:45:00.000Z',
  },
  {
    zone: 'Australia/Lord_Howe',
    day: '2027-10-03',
    time: '02:15',
    local: '2027-10-03T02:45:00+11:00',
    utc: '2027-10-02T15:45:00.000Z',
  },
  {
    zone: 'Australia/Lord_Howe',
    day: '2027-04-04',
    time: '01:45',
    local: '2027-04-04T01:45:00+11:00',
    utc: '2027-04-03T14:45:00.000Z',
  },
  // Chatham: +12:45 / +13:45, clocks change at 02:45 local standard time.
  {
    zone: 'Pacific/Chatham',
    day: '2026-09-27',
    time: '03:00',
    local: '2026-09-27T04:00:00+13:45',
    utc: '2026-09-26T14:15:00.000Z',
  },
  {
    zone: 'Pacific/Chatham',
    day: '2026-04-05',
    time: '03:00',
    local: '2026-04-05T03:00:00+13:45',
    utc: '2026-04-04T13:15:00.000Z',
  },
  {
    zone: 'Pacific/Chatham',
    day: '2027-09-26',
    time: '03:00',
    local: '2027-09-26T04:00:00+13:45',
    utc: '2027-09-25T14:15:00.000Z',
  },
  {
    zone: 'Pacific/Chatham',
    day: '2027-04-04',
    time: '03:00',
    local: '2027-04-04T03:00:00+13:45',
    utc: '2027-04-03T13:15:00.000Z',
  },
  // Kolkata keeps +05:30 all year: the same Sundays change nothing.
  {
    zone: 'Asia/Kolkata',
    day: '2026-03-08',
    time: '02:30',
    local: '2026-03-08T02:30:00+05:30',
    utc: '2026-03-07T21:00:00.000Z',
  },
  {
    zone: 'Asia/Kolkata',
    day: '2027-10-31',
    time: '02:30',
    local: '2027-10-31T02:30:00+05:30',
    utc: '2027-10-30T21:00:00.000Z',
  },
];

describe('occurrences across DST transitions', () => {
  it.each(transitions)('$zone on $day at $time runs once, at $local', ({ zone, day, time, local, utc }) => {
    const before = new Date(`${day}T00:00:00Z`);
    before.setUTCDate(before.getUTCDate() - 3);
    const schedule = compileSchedule({
      rrule: 'FREQ=DAILY',
      start: `${before.toISOString().slice(0, 10)}T${time}:00`,
      timezone: zone,
    });
    const week = occurrencesBetween(schedule, before, new Date(before.getTime() + 7 * 86_400_000), 100);
    // One occurrence each day, none missing, none twice.
    expect(new Set(days(week)).size).toBe(week.length);
    expect(week.length).toBeGreaterThanOrEqual(6);
    const onTheDay = week.filter((each) => each.key === `${day}T${time}:00`);
    expect(onTheDay).toEqual([{ key: `${day}T${time}:00`, local, utc, at: new Date(utc) }]);
  });

  it('a weekly "Sunday 02:00" in New York runs on the spring-forward Sunday, at 03:00 local', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=WEEKLY;BYDAY=SU',
      start: '2026-03-01T02:00:00',
      timezone: 'America/New_York',
    });
    expect(firstOccurrences(schedule, 3).map((each) => each.local)).toEqual([
      '2026-03-01T02:00:00-05:00',
      '2026-03-08T03:00:00-04:00',
      '2026-03-15T02:00:00-04:00',
    ]);
  });

  it('a weekly "Sunday 01:30" in New York runs once on the fall-back Sunday', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=WEEKLY;BYDAY=SU',
      start: '2026-10-25T01:30:00',
      timezone: 'America/New_York',
    });
    const list = occurrencesBetween(schedule, new Date('2026-10-31T00:00Z'), new Date('2026-11-02T00:00Z'), 10);
    expect(list.map((each) => each.utc)).toEqual(['2026-11-01T05:30:00.000Z']);
  });
});

describe('monthly rules', () => {
  it('last Friday of the month', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=MONTHLY;BYDAY=-1FR',
      start: '2027-01-01T22:00:00',
      timezone: 'Europe/Berlin',
    });
    expect(days(firstOccurrences(schedule, 4))).toEqual(['2027-01-29', '2027-02-26', '2027-03-26', '2027-04-30']);
  });

  it('second Tuesday of the month (Patch Tuesday)', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=MONTHLY;BYDAY=2TU',
      start: '2027-01-01T19:00:00',
      timezone: 'America/New_York',
    });
    expect(days(firstOccurrences(schedule, 4))).toEqual(['2027-01-12', '2027-02-09', '2027-03-09', '2027-04-13']);
  });

  it('the 31st skips the months without one', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=MONTHLY;BYMONTHDAY=31',
      start: '2027-01-31T03:00:00',
      timezone: 'Asia/Kolkata',
    });
    expect(days(firstOccurrences(schedule, 7))).toEqual([
      '2027-01-31',
      '2027-03-31',
      '2027-05-31',
      '2027-07-31',
      '2027-08-31',
      '2027-10-31',
      '2027-12-31',
    ]);
  });

  it('the 29th and 30th skip February when it has none, and COUNT counts only real dates', () => {
    const thirtieth = compileSchedule({ rrule: 'FREQ=MONTHLY;COUNT=3', start: '2027-01-30T03:00:00', timezone: 'UTC' });
    expect(days(firstOccurrences(thirtieth, 10))).toEqual(['2027-01-30', '2027-03-30', '2027-04-30']);
    const leap = compileSchedule({
      rrule: 'FREQ=MONTHLY;BYMONTHDAY=29',
      start: '2027-12-29T03:00:00',
      timezone: 'Pacific/Chatham',
    });
    expect(days(firstOccurrences(leap, 4))).toEqual(['2027-12-29', '2028-01-29', '2028-02-29', '2028-03-29']);
    const plain = compileSchedule({
      rrule: 'FREQ=MONTHLY;BYMONTHDAY=29',
      start: '2026-12-29T03:00:00',
      timezone: 'UTC',
    });
    expect(days(firstOccurrences(plain, 3))).toEqual(['2026-12-29', '2027-01-29', '2027-03-29']);
  });
});

describe('EXDATE, UNTIL, one-offs and windows', () => {
  it('EXDATEs are local date-times left out', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=DAILY;COUNT=4',
      start: '2027-03-26T02:30:00',
      timezone: 'Europe/Berlin',
      exdates: ['2027-03-28T02:30:00'],
    });
    expect(keys(firstOccurrences(schedule, 10))).toEqual([
      '2027-03-26T02:30:00',
      '2027-03-27T02:30:00',
      '2027-03-29T02:30:00',
    ]);
  });

  it('UNTIL is an instant', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=DAILY;UNTIL=20270327T013000Z',
      start: '2027-03-25T02:30:00',
      timezone: 'Europe/Berlin',
    });
    expect(keys(firstOccurrences(schedule, 10))).toEqual([
      '2027-03-25T02:30:00',
      '2027-03-26T02:30:00',
      '2027-03-27T02:30:00',
    ]);
  });

  it('a one-off has its one occurrence, and none after it', () => {
    const schedule = compileSchedule({ start: '2027-03-28T02:30:00', timezone: 'Europe/Berlin' });
    expect(nextOccurrence(schedule, new Date('2027-03-01T00:00Z'))?.utc).toBe('2027-03-28T01:30:00.000Z');
    expect(nextOccurrence(schedule, new Date('2027-03-29T00:00Z'))).toBeUndefined();
  });

  it('the next occurrence and the one in progress of a window', () => {
    const schedule = compileSchedule({
      rrule: 'FREQ=WEEKLY;BYDAY=SA',
      start: '2027-01-02T22:00:00',
      timezone: 'Europe/Berlin',
    });
    expect(nextOccurrence(schedule, new Date('2027-01-03T00:00Z'))?.key).toBe('2027-01-09T22:00:00');
    expect(occurrenceInProgress(schedule, new Date('2027-01-09T22:30Z'), 120)?.key).toBe('2027-01-09T22:00:00');
    expect(occurrenceInProgress(schedule, new Date('2027-01-10T00:00Z'), 120)).toBeUndefined();
  });

  it.each([
    [{ rrule: 'FREQ=MINUTELY', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'RRULE:FREQ=DAILY', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=DAILY;BYFOO=1', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=MONTHLY;BYMONTHDAY=40', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=DAILY;BYHOUR=24', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=DAILY;COUNT=abc', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=WEEKLY;BYDAY=XX', start: '2027-01-01T00:00:00', timezone: 'UTC' }, 'rrule'],
    [{ rrule: 'FREQ=DAILY', start: '2027-02-30T00:00:00', timezone: 'UTC' }, 'start'],
    [{ rrule: 'FREQ=DAILY', start: '2027-01-01T00:00:00+01:00', timezone: 'UTC' }, 'start'],
    [{ rrule: 'FREQ=DAILY', start: '2027-01-01T24:00:00', timezone: 'UTC' }, 'start'],
    [{ rrule: 'FREQ=DAILY', start: '2027-04-31T02:00', timezone: 'UTC' }, 'start'],
    [
      { rrule: 'FREQ=DAILY', start: '2027-01-01T02:00:00', exdates: ['2027-01-01T02:60:00'], timezone: 'UTC' },
      'exdates',
    ],
    [{ rrule: 'FREQ=DAILY', start: '2027-01-01T00:00:00', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ rrule: 'FREQ=DAILY', start: '2027-01-01T00:00:00', timezone: '+01:00' }, 'timezone'],
  ])('refuses %o naming %s', (schedule, field) => {
    expect(() => compileSchedule(schedule)).toThrow(ScheduleProblem);
    try {
      compileSchedule(schedule);
    } catch (error) {
      expect((error as ScheduleProblem).field).toBe(field);
    }
  });
});
