import { describe, expect, it } from 'vitest';
import { onlineWindowMinutes as groupsWindow } from '#shared/agents/online.ts';
import { fieldText, isOnline, onlineWindowMinutes } from '../../web/src/devices/format.ts';

describe("the Devices page's rules", () => {
  it('calls a device online within the window of the filter language, so the column and an online filter agree', () => {
    expect(onlineWindowMinutes).toBe(groupsWindow);
    const now = Date.parse('2026-11-20T10:00:00Z');
    const ago = (minutes: number) => new Date(now - minutes * 60_000).toISOString();
    expect(isOnline(ago(0), now)).toBe(true);
    expect(isOnline(ago(onlineWindowMinutes), now)).toBe(true);
    expect(isOnline(ago(onlineWindowMinutes + 0.01), now)).toBe(false);
    expect(isOnline(null, now)).toBe(false);
  });

  it('writes custom field values as text', () => {
    expect([fieldText('A-1'), fieldText(12.5), fieldText(true), fieldText(false), fieldText(['a', 'b'])]).toEqual([
      'A-1',
      '12.5',
      'yes',
      'no',
      'a, b',
    ]);
    expect(fieldText(null)).toBe('');
  });
});
