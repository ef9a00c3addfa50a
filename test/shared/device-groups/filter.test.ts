import { describe, expect, it } from 'vitest';
import { compileFilter, type DeviceFilter, filterIssues, filterParams } from '#shared/device-groups/filter.ts';

describe('compileFilter', () => {
  it('binds every value as a parameter: no text of the filter reaches the SQL', () => {
    const hostile = "x'); DROP TABLE devices; --";
    const filter: DeviceFilter = {
      any: [
        { field: 'hostname', op: 'contains', value: hostile },
        { field: 'osType', op: 'in', value: [hostile, 'linux'] },
        { not: { field: 'hostname', op: 'matches', value: '^a.*b$' } },
        { field: 'lastSeenAt', op: 'withinDays', value: 7 },
      ],
    };
    expect(filterIssues(filter)).toEqual([]);
    const { params, bind } = filterParams();
    const sql = compileFilter(filter, bind);
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain('linux');
    expect(sql).not.toContain('^a');
    expect(Object.values(params)).toEqual([`%${hostile}%`, hostile, 'linux', '^a.*b$', 7]);
    expect(sql).toBe(
      "((d.hostname ILIKE :f0::text) OR (lower(d.os_type) IN (lower(:f1::text), lower(:f2::text))) OR (NOT coalesce((d.hostname ~* :f3::text), false)) OR (d.last_seen_hour >= date_trunc('hour', (now() - make_interval(days => :f4::int)) AT TIME ZONE 'UTC') AND d.last_seen_at >= now() - make_interval(days => :f4::int)))",
    );
  });

  it('escapes LIKE wildcards so they match literally', () => {
    const { params, bind } = filterParams();
    compileFilter({ field: 'hostname', op: 'startsWith', value: '100%_a\\' }, bind);
    expect(params.f0).toBe('100\\%\\_a\\\\%');
  });
});

describe('the posture field', () => {
  it('compiles { category, product?, status? } to a bound EXISTS over the latest snapshot', () => {
    const { params, bind } = filterParams();
    const sql = compileFilter(
      { field: 'posture', op: 'has', value: { category: 'rmm', product: "Datto RMM'--", status: 'active' } },
      bind,
    );
    expect(sql).toBe(
      '(EXISTS (SELECT 1 FROM device_posture_detections x WHERE x.device_id = d.id AND x.category = :f0::text AND lower(x.product) = lower(:f1::text) AND x.status = :f2::text))',
    );
    expect(Object.values(params)).toEqual(['rmm', "Datto RMM'--", 'active']);
  });

  it('names the path of a posture value of the wrong shape', () => {
    expect(filterIssues({ field: 'posture', op: 'has', value: { category: 'antivirus', extra: 1 } })).toEqual([
      { path: ['value', 'category'], message: expect.any(String) },
      { path: ['value'], message: expect.stringContaining('extra') },
    ]);
  });
});

describe('filterIssues', () => {
  it('names each fault by its path', () => {
    expect(
      filterIssues({
        all: [
          { field: 'nope', op: 'equals', value: 1 },
          { field: 'createdAt', op: 'withinDays', value: 0 },
          { field: 'agentStatus', op: 'equals', value: 'asleep' },
          { any: 'x' },
        ],
      }).map((issue) => issue.path.join('.')),
    ).toEqual(['all.0.field', 'all.1.value', 'all.2.value', 'all.3.any']);
  });
});
