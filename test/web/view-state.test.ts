import { describe, expect, it } from 'vitest';
import { filterParams, readViewState, viewStateSearch } from '../../web/src/view-state.ts';

describe('the viewer keeps its view in the URL', () => {
  it('reads filters, search, page, page size and the open entry from the query string', () => {
    const state = readViewState(
      '?q=INC-4711&user=alice&action=login&resource=FS-01&from=2026-03-01&to=2026-03-31T12%3A00%3A00Z&orgId=o-1&page=3&limit=25&entry=e-1',
    );
    expect(state).toEqual({
      q: 'INC-4711',
      user: 'alice',
      action: 'login',
      resource: 'FS-01',
      from: '2026-03-01',
      to: '2026-03-31T12:00:00Z',
      orgId: 'o-1',
      page: 3,
      limit: 25,
      entry: 'e-1',
    });
  });

  it('writes back the same link for the same view, leaving defaults out', () => {
    const search = '?user=alice+smith&action=device.&page=2&limit=100';
    expect(viewStateSearch(readViewState(search))).toBe(search);
    expect(viewStateSearch(readViewState(''))).toBe('');
    expect(viewStateSearch(readViewState('?page=1&limit=50'))).toBe('');
  });

  it('falls back to page 1 and 50 rows for values that are not whole numbers, and caps the page size at 100', () => {
    expect(readViewState('?page=-2&limit=abc')).toMatchObject({ page: 1, limit: 50 });
    expect(readViewState('?page=2.5&limit=0')).toMatchObject({ page: 1, limit: 50 });
    expect(readViewState('?limit=500')).toMatchObject({ limit: 100 });
  });

  it('hands the API only the filters in use, escaped', () => {
    const params = filterParams(readViewState('?resource=100%25+%26+more&user=&page=4'));
    expect(params.toString()).toBe('resource=100%25+%26+more');
  });
});
