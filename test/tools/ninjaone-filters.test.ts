import { describe, expect, it } from 'vitest';
import { filterIssues } from '#shared/device-groups/filter.ts';
import { translateNinjaOneFilters } from '#tools/ninjaone-filters.ts';

const site = '5b1f0c55-0d6b-4a44-9f3e-7f3b7b0d2a11';

describe('NinjaOne device filters as dynamic groups', () => {
  it('translates class, location, online, created and the target organization into a filter that checks', () => {
    const { groups, skipped } = translateNinjaOneFilters(
      [
        {
          id: 563,
          name: 'Berlin Windows online since 2024',
          df: 'org = 12 AND loc in (7) AND class in (WINDOWS_SERVER, WINDOWS_WORKSTATION) AND online AND created after 2024-01-01',
        },
        { id: 564, name: 'Not Macs', df: 'class != MAC && status = APPROVED' },
        { id: 565, name: 'Enrolled on one day', df: 'created = 20240301' },
      ],
      { org: 12, locations: { '7': site } },
    );
    expect(skipped).toEqual([]);
    expect(groups[0]).toEqual({
      externalId: '563',
      sourceSystem: 'ninjaone',
      name: 'Berlin Windows online since 2024',
      filter: {
        all: [
          { field: 'siteId', op: 'in', value: [site] },
          { field: 'osType', op: 'in', value: ['windows'] },
          { field: 'online', op: 'equals', value: true },
          { field: 'createdAt', op: 'after', value: '2024-01-01T00:00:00Z' },
        ],
      },
    });
    expect(groups[1]!.filter).toEqual({ not: { field: 'osType', op: 'in', value: ['macos'] } });
    expect(groups[2]!.filter).toEqual({
      all: [
        { field: 'createdAt', op: 'gte', value: '2024-03-01T00:00:00Z' },
        { field: 'createdAt', op: 'lt', value: '2024-03-02T00:00:00.000Z' },
      ],
    });
    for (const group of groups) expect(filterIssues(group.filter)).toEqual([]);
  });

  it('skips a whole search with a clause it cannot translate, saying why, rather than widening the group', () => {
    const { groups, skipped } = translateNinjaOneFilters(
      [
        { id: 1, name: 'Roles', df: 'role = 4 AND online' },
        { id: 2, name: 'Other customer', df: 'org = 99' },
        { id: 3, name: 'Switches', df: 'class = NMS_SWITCH' },
        { id: 4, name: 'Nested', df: 'group 563' },
        { id: 5, name: 'Everything', df: 'status = APPROVED' },
      ],
      { org: 12 },
    );
    expect(groups).toEqual([]);
    expect(skipped.map((s) => [s.externalId, s.reasons.length])).toEqual([
      ['1', 1],
      ['2', 1],
      ['3', 1],
      ['4', 1],
      ['5', 1],
    ]);
    expect(skipped[0]!.reasons[0]).toMatch(/role = 4/);
  });
});
