import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditDetailedEntry, AuditViewerEntry } from '#shared/audit/schemas.ts';
import { changedFields, changesOf, rowOfDetailedEntry, rowOfViewerEntry } from '../../web/src/entries.ts';
import { rowsSummary } from '../../web/src/paging.ts';
import { filterInstant, instantOfLocalInput, localInputValue } from '../../web/src/time.ts';

const additions = {
  orgId: 'o-1',
  seq: 7,
  actorType: 'agent' as const,
  actorHostname: 'FS-01',
  category: 'device' as const,
  result: 'success' as const,
};

describe('the two formats of the trail read into one row', () => {
  it('takes the viewer format with its serialized details', () => {
    const entry: AuditViewerEntry = {
      ...additions,
      id: 'e-1',
      timestamp: '2026-03-01T10:00:00.000000Z',
      action: 'device.update',
      resource: 'FS-01',
      resourceType: 'device',
      details: '{"ticket":"T-1"}',
      ipAddress: '',
      userAgent: '',
      sessionId: null,
      user: { name: 'Alice', email: 'alice@acme.test', role: 'org_admin', department: '' },
      changes: { before: { a: 1 }, after: { a: 2 } },
    };
    expect(rowOfViewerEntry(entry)).toMatchObject({
      details: { ticket: 'T-1' },
      resource: { type: 'device', name: 'FS-01' },
      actorHostname: 'FS-01',
      changes: { before: { a: 1 }, after: { a: 2 } },
    });
  });

  it('takes the detailed format and finds its changes where the viewer format would', () => {
    const entry: AuditDetailedEntry = {
      ...additions,
      id: 'e-2',
      timestamp: '2026-03-01T10:00:00.000000Z',
      action: 'policy.update',
      user: { id: 'u', name: '', email: '', role: '' },
      resource: { type: 'policy', id: null, name: 'Ring 1' },
      ipAddress: null,
      userAgent: null,
      details: { changes: { before: { x: 1 }, after: { x: 2 } } },
      errorMessage: 'boom',
    };
    expect(rowOfDetailedEntry(entry)).toMatchObject({
      ipAddress: '',
      userAgent: '',
      errorMessage: 'boom',
      changes: { before: { x: 1 }, after: { x: 2 } },
    });
    expect(changesOf({ before: { y: 1 }, after: { y: 2 }, changes: { before: { x: 1 }, after: {} } })).toEqual({
      before: { y: 1 },
      after: { y: 2 },
    });
    expect(changesOf({ before: 'not an object' })).toEqual({ before: {}, after: {} });
  });

  it('lists every field of a before/after pair, in alphabetical order, with how it changed', () => {
    expect(
      changedFields({
        before: { name: 'old', tags: ['a'], siteId: null, same: 1 },
        after: { name: 'new', tags: ['a', 'b'], siteId: 's-2', same: 1, gone: undefined },
      }),
    ).toEqual([
      { field: 'gone', before: '', after: '', kind: 'unchanged' },
      { field: 'name', before: 'old', after: 'new', kind: 'changed' },
      { field: 'same', before: '1', after: '1', kind: 'unchanged' },
      { field: 'siteId', before: '', after: 's-2', kind: 'added' },
      { field: 'tags', before: '["a"]', after: '["a", "b"]', kind: 'changed' },
    ]);
    expect(changedFields({ before: {}, after: { window: { from: '01:00', to: '05:00' } } })[0]!.after).toBe(
      '{"from": "01:00", "to": "05:00"}',
    );
    expect(changedFields({ before: { hostname: 'FS-01' }, after: {} })).toEqual([
      { field: 'hostname', before: 'FS-01', after: '', kind: 'removed' },
    ]);
  });
});

describe('the row count of a page', () => {
  const page = { page: 2, limit: 50, totalPages: 65 };
  it('gives the total when it is exact', () => {
    expect(rowsSummary({ ...page, total: 3214, hasMore: true, totalExact: true }, 50)).toBe('Rows 51–100 of 3,214');
  });
  it('says more follow when nothing was counted (skipCount), and when none do', () => {
    expect(rowsSummary({ ...page, total: 101, hasMore: true, totalExact: false }, 50)).toBe('Rows 51–100, more follow');
    expect(rowsSummary({ ...page, total: 73, hasMore: false, totalExact: false }, 23)).toBe('Rows 51–73, no more');
  });
  it('gives a lower bound when the count stopped at its limit', () => {
    expect(rowsSummary({ ...page, total: 10_000, hasMore: true, totalExact: false }, 50)).toBe(
      'Rows 51–100 of at least 10,000',
    );
  });
  it('says when a page is empty', () => {
    expect(rowsSummary({ ...page, total: 0, hasMore: false, totalExact: true }, 0)).toMatch(/first page/);
  });
});

describe('from and to in local time', () => {
  let zone: string | undefined;
  beforeEach(() => {
    zone = process.env.TZ;
    process.env.TZ = 'Asia/Kolkata';
  });
  afterEach(() => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  });

  it('reads a filter as the API does: a date alone is a whole UTC day, a time without offset is UTC', () => {
    expect(filterInstant('2026-03-01', 'from')?.toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(filterInstant('2026-03-01', 'to')?.toISOString()).toBe('2026-03-01T23:59:59.999Z');
    expect(filterInstant('2026-03-01T10:00:00', 'from')?.toISOString()).toBe('2026-03-01T10:00:00.000Z');
    expect(filterInstant('2026-03-01T10:00:00+01:00', 'from')?.toISOString()).toBe('2026-03-01T09:00:00.000Z');
    expect(filterInstant('soon', 'from')).toBeUndefined();
  });

  it('shows an instant in the local time zone and reads a local time back as UTC', () => {
    expect(localInputValue(new Date('2026-03-01T10:00:00Z'))).toBe('2026-03-01T15:30:00');
    expect(instantOfLocalInput('2026-03-01T15:30:00', 'from')).toBe('2026-03-01T10:00:00.000Z');
  });

  it('makes a to-time include the whole minute or second it names', () => {
    expect(instantOfLocalInput('2026-03-01T15:30', 'to')).toBe('2026-03-01T10:00:59.999999Z');
    expect(instantOfLocalInput('2026-03-01T15:30:15', 'to')).toBe('2026-03-01T10:00:15.999999Z');
    expect(instantOfLocalInput('', 'to')).toBeUndefined();
  });
});
