import { describe, expect, it } from 'vitest';
import { type Candidate, type DeviceFacts, type Exemption, resolvePolicies } from '#shared/policies/resolve.ts';

const device: DeviceFacts = {
  id: 'dev',
  orgId: 'org',
  siteId: 'site',
  osType: 'windows',
  role: 'server',
  groupIds: new Set(['grp']),
  orgBlocked: false,
  siteBlocked: false,
};

let serial = 0;
/** An assignment of a policy with one item `cpu` (its threshold names the assignment). */
function at(level: Candidate['level'], extra: Partial<Candidate> = {}): Candidate {
  serial += 1;
  const targetId = { partner: 'partner', organization: 'org', site: 'site', group: 'grp', device: 'dev' }[level];
  return {
    assignmentId: `a${String(serial).padStart(3, '0')}`,
    policyId: `p-${level}-${serial}`,
    policyName: `${level} policy`,
    policyVersion: 1,
    level,
    targetId,
    priority: 100,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, serial)),
    osTypes: null,
    roles: null,
    items: [{ key: 'cpu', type: 'metric', threshold: serial }],
    ...extra,
  };
}
const winner = (candidates: Candidate[], facts: Partial<DeviceFacts> = {}, exemptions: Exemption[] = []) =>
  resolvePolicies('monitoring', { ...device, ...facts }, candidates, exemptions).items.find((i) => i.key === 'cpu')
    ?.origin.assignmentId ?? null;

describe('one precedence rule', () => {
  const levels = ['device', 'group', 'site', 'organization', 'partner'] as const;
  // Every pair of levels: the closer one wins whatever the priorities and ages.
  for (const [i, near] of levels.entries())
    for (const far of levels.slice(i + 1))
      it(`${near} beats ${far}, even with a worse priority and a younger assignment`, () => {
        const farA = at(far, { priority: 1 });
        const nearA = at(near, { priority: 999 });
        expect(winner([farA, nearA])).toBe(nearA.assignmentId);
        expect(winner([nearA, farA])).toBe(nearA.assignmentId);
      });

  it('within a level the lower priority number wins, then the older assignment, then the lower id', () => {
    const old = at('site', { priority: 50 });
    const better = at('site', { priority: 10 });
    expect(winner([old, better])).toBe(better.assignmentId);
    const first = at('organization');
    const second = at('organization');
    expect(winner([second, first])).toBe(first.assignmentId);
    const sameTime = new Date(Date.UTC(2026, 5, 1));
    const x = at('partner', { assignmentId: 'b', createdAt: sameTime });
    const y = at('partner', { assignmentId: 'a', createdAt: sameTime });
    expect(winner([x, y])).toBe('a');
  });

  it('what lost is listed as overridden, in precedence order', () => {
    const p = at('partner');
    const o = at('organization');
    const d = at('device');
    const effective = resolvePolicies('monitoring', device, [p, o, d], []);
    expect(effective.items[0]!.origin.assignmentId).toBe(d.assignmentId);
    expect(effective.items[0]!.overridden.map((x) => x.assignmentId)).toEqual([o.assignmentId, p.assignmentId]);
  });

  it('assignments of other targets never apply', () => {
    for (const level of ['organization', 'site', 'group', 'device'] as const)
      expect(winner([at(level, { targetId: 'someone-else' })])).toBeNull();
    expect(winner([at('group')], { groupIds: new Set() })).toBeNull();
  });

  describe('filters', () => {
    const cases: [string, Partial<Candidate>, Partial<DeviceFacts>, boolean][] = [
      ['matching OS type', { osTypes: ['windows', 'linux'] }, {}, true],
      ['other OS type', { osTypes: ['linux'] }, {}, false],
      ['OS type of a device that reports none', { osTypes: ['windows'] }, { osType: null }, false],
      ['OS type in another case', { osTypes: ['windows'] }, { osType: 'Windows' }, true],
      ['matching role', { roles: ['server'] }, {}, true],
      ['other role', { roles: ['workstation'] }, {}, false],
      ['role of a device that reports none', { roles: ['server'] }, { role: null }, false],
      ['both matching', { osTypes: ['windows'], roles: ['server'] }, {}, true],
      ['one of both failing', { osTypes: ['windows'], roles: ['workstation'] }, {}, false],
    ];
    for (const [name, narrowing, facts, applies] of cases)
      it(`${name}: ${applies ? 'applies' : 'does not apply'}`, () => {
        const narrowed = at('device', narrowing);
        const fallback = at('partner');
        expect(winner([narrowed, fallback], facts)).toBe(applies ? narrowed.assignmentId : fallback.assignmentId);
      });
  });

  describe('blocked inheritance', () => {
    const matrix: [string, Partial<DeviceFacts>, Candidate['level'][]][] = [
      ['organization blocks', { orgBlocked: true }, ['partner']],
      ['site blocks', { siteBlocked: true }, ['partner', 'organization']],
      ['both block', { orgBlocked: true, siteBlocked: true }, ['partner', 'organization']],
      ['nothing blocks', {}, []],
    ];
    for (const [name, facts, stopped] of matrix)
      it(`${name}: stops ${stopped.join(' and ') || 'nothing'}; lower levels still apply`, () => {
        for (const level of ['partner', 'organization', 'site', 'group', 'device'] as const) {
          const only = at(level);
          const effective = resolvePolicies('monitoring', { ...device, ...facts }, [only], []);
          expect(effective.items.length).toBe(stopped.includes(level) ? 0 : 1);
          expect(effective.blocked.length).toBe(stopped.includes(level) ? 1 : 0);
        }
      });
  });

  describe('exemptions', () => {
    const matrix: [Exemption['level'], string, Partial<DeviceFacts>, boolean][] = [
      ['device', 'dev', {}, true],
      ['device', 'other-device', {}, false],
      ['site', 'site', {}, true],
      ['site', 'other-site', {}, false],
      ['group', 'grp', {}, true],
      ['group', 'grp', { groupIds: new Set() }, false],
    ];
    for (const [level, targetId, facts, exempt] of matrix)
      it(`a ${level} exemption for ${targetId}: ${exempt ? 'removes the item' : 'leaves it'}`, () => {
        const a = at('organization');
        const e: Exemption = { id: 'e1', policyId: a.policyId, itemKey: 'cpu', level, targetId, reason: 'test' };
        const effective = resolvePolicies('monitoring', { ...device, ...facts }, [a], [e]);
        expect(effective.items.length).toBe(exempt ? 0 : 1);
        expect(effective.exempted.length).toBe(exempt ? 1 : 0);
      });

    it("exempts one policy's item: another policy carrying the same key then applies", () => {
      const site = at('site');
      const partner = at('partner');
      const e: Exemption = {
        id: 'e',
        policyId: site.policyId,
        itemKey: 'cpu',
        level: 'device',
        targetId: 'dev',
        reason: 'r',
      };
      expect(winner([site, partner], {}, [e])).toBe(partner.assignmentId);
    });

    it('an exemption of another item key leaves this one', () => {
      const a = at('site');
      const e: Exemption = {
        id: 'e',
        policyId: a.policyId,
        itemKey: 'disk',
        level: 'device',
        targetId: 'dev',
        reason: 'r',
      };
      expect(winner([a], {}, [e])).toBe(a.assignmentId);
    });
  });

  it('items are decided key by key: each key from its closest assignment', () => {
    const partner = at('partner', { items: [{ key: 'cpu' }, { key: 'disk' }] });
    const site = at('site', { items: [{ key: 'cpu' }] });
    const effective = resolvePolicies('monitoring', device, [partner, site], []);
    expect(Object.fromEntries(effective.items.map((i) => [i.key, i.origin.level]))).toEqual({
      cpu: 'site',
      disk: 'partner',
    });
  });

  it('a whole-policy kind takes the closest policy with all its items and none of the others', () => {
    const partner = at('partner', { items: [{ key: 'ring-1' }, { key: 'ring-2' }] });
    const site = at('site', { items: [{ key: 'ring-1' }] });
    const effective = resolvePolicies('patching', device, [partner, site], []);
    expect(effective.items.map((i) => [i.key, i.origin.level])).toEqual([['ring-1', 'site']]);
  });

  it('the config version changes when what applies changes, and only then', () => {
    const a = at('site');
    const b = at('partner');
    const v1 = resolvePolicies('monitoring', device, [a, b], []).configVersion;
    expect(resolvePolicies('monitoring', device, [b, a], []).configVersion).toBe(v1);
    expect(resolvePolicies('monitoring', device, [{ ...a, policyVersion: 2 }, b], []).configVersion).not.toBe(v1);
    expect(resolvePolicies('monitoring', device, [b], []).configVersion).not.toBe(v1);
  });
});
