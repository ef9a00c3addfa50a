import { describe, expect, it } from 'vitest';
import { formatMinor, minorDigitsOf, parseDecimal, roundHalfEven, toMinor } from '#shared/billing/money.ts';
import {
  addMonthsClamped,
  billableDays,
  countDays,
  periodAt,
  periodContaining,
  periodStartingOn,
} from '#shared/billing/periods.ts';
import { deviceRole } from '#shared/billing/usage.ts';

describe('money', () => {
  it('rounds half to even, negative amounts too', () => {
    const cents = (text: string) => toMinor(parseDecimal(text), 2);
    expect([cents('0.025'), cents('0.035'), cents('0.0251'), cents('-0.025'), cents('-0.035')]).toEqual([
      2n,
      4n,
      3n,
      -2n,
      -4n,
    ]);
    expect(roundHalfEven({ num: 5n, den: 2n })).toBe(2n);
    expect(roundHalfEven({ num: 7n, den: 2n })).toBe(4n);
  });

  it('keeps sums exact where binary floating point does not', () => {
    const sum = toMinor(parseDecimal('0.1'), 2) + toMinor(parseDecimal('0.2'), 2);
    expect(formatMinor(sum, 2)).toBe('0.30');
    expect(0.1 + 0.2).not.toBe(0.3);
  });

  it("formats an amount with exactly its currency's digits", () => {
    expect([minorDigitsOf('EUR'), minorDigitsOf('JPY'), minorDigitsOf('BHD')]).toEqual([2, 0, 3]);
    expect(formatMinor(toMinor(parseDecimal('1234.5'), 0), 0)).toBe('1234');
    expect(formatMinor(toMinor(parseDecimal('1.0005'), 3), 3)).toBe('1.000');
    expect(formatMinor(-5n, 2)).toBe('-0.05');
  });
});

describe('periods', () => {
  it('clamp to the month end from the start date, never drifting', () => {
    expect(Array.from({ length: 5 }, (_, k) => addMonthsClamped('2024-01-31', k))).toEqual([
      '2024-01-31',
      '2024-02-29',
      '2024-03-31',
      '2024-04-30',
      '2024-05-31',
    ]);
    expect(addMonthsClamped('2025-01-31', 1)).toBe('2025-02-28');
    expect(periodAt('2024-11-30', 3, 1)).toEqual({ start: '2025-02-28', end: '2025-05-30', index: 1 });
    expect(periodContaining('2024-01-31', 12, '2025-01-30')).toMatchObject({ start: '2024-01-31', end: '2025-01-31' });
    expect(periodStartingOn('2024-01-31', 1, '2024-02-29')?.index).toBe(1);
    expect(periodStartingOn('2024-01-31', 1, '2024-03-01')).toBeUndefined();
  });

  it('bill the days within the contract and outside its pauses', () => {
    const period = periodAt('2024-01-01', 1, 2);
    expect(period).toMatchObject({ start: '2024-03-01', end: '2024-04-01' });
    const ranges = billableDays(period, { startDate: '2024-01-01', endDate: '2024-03-25' }, [
      { pausedOn: '2024-03-05', resumedOn: '2024-03-08' },
      { pausedOn: '2024-03-20', resumedOn: null },
    ]);
    expect(ranges).toEqual([
      { from: '2024-03-01', to: '2024-03-05' },
      { from: '2024-03-08', to: '2024-03-20' },
    ]);
    expect(countDays(ranges)).toBe(16);
  });
});

describe('the role a device is billed as', () => {
  it('is the role its agent reports, else a server edition in its OS names a server', () => {
    const windows = { osType: 'windows', osVersion: 'Windows Server 2022' };
    expect(deviceRole({ ...windows, role: 'workstation' })).toBe('workstation');
    expect(deviceRole({ ...windows, role: null })).toBe('server');
    expect(deviceRole({ osType: 'linux', osVersion: 'Ubuntu 24.04', role: 'server' })).toBe('server');
    expect(deviceRole({ osType: 'macos', osVersion: '15.1' })).toBe('workstation');
  });
});
