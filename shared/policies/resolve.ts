import { createHash } from 'node:crypto';
import type { AssignmentLevel, PolicyKind } from './schemas.ts';

/**
 * The one precedence rule of every policy kind, as a pure function of what the database holds about one device: the
 * assignments that could reach it, the exemptions of its organization and the groups it belongs to. Every consumer
 * (the agent's config, evaluation, the effective-policies reply, reports) goes through `resolvePolicies`.
 */

/** The device as precedence sees it. */
export interface DeviceFacts {
  id: string;
  orgId: string;
  siteId: string;
  osType: string | null;
  role: string | null;
  /** Device groups it is a member of now (static rows and dynamic filters alike). */
  groupIds: ReadonlySet<string>;
  /** The organization blocks inheritance: partner-level assignments stop there. */
  orgBlocked: boolean;
  /** The site blocks inheritance: partner- and organization-level assignments stop there. */
  siteBlocked: boolean;
}

export interface PolicyItem {
  key: string;
  [setting: string]: unknown;
}

/** One assignment that could reach the device, with its policy as it is now. */
export interface Candidate {
  assignmentId: string;
  policyId: string;
  policyName: string;
  policyVersion: number;
  level: AssignmentLevel;
  targetId: string;
  priority: number;
  createdAt: Date;
  osTypes: readonly string[] | null;
  roles: readonly string[] | null;
  items: readonly PolicyItem[];
}

export interface Exemption {
  id: string;
  policyId: string;
  itemKey: string;
  level: 'site' | 'group' | 'device';
  targetId: string;
  reason: string;
}

export interface Origin {
  policyId: string;
  policyName: string;
  policyVersion: number;
  assignmentId: string;
  level: AssignmentLevel;
  targetId: string;
  priority: number;
}

export interface EffectiveItem {
  key: string;
  item: PolicyItem;
  origin: Origin;
  overridden: Origin[];
}

export interface Effective {
  kind: PolicyKind;
  items: EffectiveItem[];
  exempted: { key: string; origin: Origin; exemption: Omit<Exemption, 'policyId' | 'itemKey'> }[];
  blocked: Origin[];
  /** Changes whenever what applies changes (a policy's version, the winning assignment, an exemption). */
  configVersion: string;
}

/** Closest first: a device's own assignment beats its group's, which beats its site's, its organization's, the partner's. */
const levelRank: Record<AssignmentLevel, number> = { device: 0, group: 1, site: 2, organization: 3, partner: 4 };

/**
 * Kinds whose items only make sense together (patching's rings): the closest policy wins as a whole. Every other kind
 * is decided item key by item key.
 */
const wholePolicyKinds: ReadonlySet<PolicyKind> = new Set(['patching']);

function reaches(candidate: Candidate, device: DeviceFacts): boolean {
  switch (candidate.level) {
    case 'partner':
      return true;
    case 'organization':
      return candidate.targetId === device.orgId;
    case 'site':
      return candidate.targetId === device.siteId;
    case 'group':
      return device.groupIds.has(candidate.targetId);
    case 'device':
      return candidate.targetId === device.id;
  }
}

function narrowedAway(candidate: Candidate, device: DeviceFacts): boolean {
  if (candidate.osTypes && !candidate.osTypes.includes((device.osType ?? '').toLowerCase())) return true;
  return candidate.roles !== null && !candidate.roles.includes(device.role ?? '');
}

function blockedBy(candidate: Candidate, device: DeviceFacts): boolean {
  if (candidate.level === 'partner') return device.orgBlocked || device.siteBlocked;
  return candidate.level === 'organization' && device.siteBlocked;
}

function exemptionOf(exemptions: readonly Exemption[], policyId: string, key: string, device: DeviceFacts) {
  return exemptions.find(
    (e) =>
      e.policyId === policyId &&
      e.itemKey === key &&
      ((e.level === 'device' && e.targetId === device.id) ||
        (e.level === 'site' && e.targetId === device.siteId) ||
        (e.level === 'group' && device.groupIds.has(e.targetId))),
  );
}

const originOf = (c: Candidate): Origin => ({
  policyId: c.policyId,
  policyName: c.policyName,
  policyVersion: c.policyVersion,
  assignmentId: c.assignmentId,
  level: c.level,
  targetId: c.targetId,
  priority: c.priority,
});

/**
 * The effective items of one kind on one device. For each item key (or, for a whole-policy kind, for the kind) the
 * closest level wins, then the lower priority number, then the older assignment (then the lower id, so the order is
 * total). An exemption removes one policy's item: where another assignment carries the same key, that one applies.
 * Assignments narrowed by OS type or role to others never apply; a blocked assignment is listed as blocked.
 */
export function resolvePolicies(
  kind: PolicyKind,
  device: DeviceFacts,
  candidates: readonly Candidate[],
  exemptions: readonly Exemption[],
): Effective {
  const blocked: Origin[] = [];
  const applicable = candidates
    .filter((c) => reaches(c, device) && !narrowedAway(c, device))
    .filter((c) => {
      if (!blockedBy(c, device)) return true;
      blocked.push(originOf(c));
      return false;
    })
    .sort(
      (a, b) =>
        levelRank[a.level] - levelRank[b.level] ||
        a.priority - b.priority ||
        a.createdAt.getTime() - b.createdAt.getTime() ||
        (a.assignmentId < b.assignmentId ? -1 : a.assignmentId > b.assignmentId ? 1 : 0),
    );
  const winners = new Map<string, EffectiveItem>();
  const exempted: Effective['exempted'] = [];
  const whole = wholePolicyKinds.has(kind);
  let wholeWinner: string | undefined;
  for (const candidate of applicable) {
    if (whole && wholeWinner !== undefined && wholeWinner !== candidate.policyId) {
      for (const item of candidate.items) winners.get(item.key)?.overridden.push(originOf(candidate));
      continue;
    }
    for (const item of candidate.items) {
      const exemption = exemptionOf(exemptions, candidate.policyId, item.key, device);
      if (exemption) {
        const { id, level, targetId, reason } = exemption;
        exempted.push({ key: item.key, origin: originOf(candidate), exemption: { id, level, targetId, reason } });
        continue;
      }
      const winner = winners.get(item.key);
      if (winner) winner.overridden.push(originOf(candidate));
      else winners.set(item.key, { key: item.key, item, origin: originOf(candidate), overridden: [] });
    }
    if (whole && candidate.items.length > 0) wholeWinner = candidate.policyId;
  }
  const items = [...winners.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { kind, items, exempted, blocked, configVersion: configVersionOf(items) };
}

/** A short digest of what applies: the item keys with the policy and version each comes from. */
export function configVersionOf(items: readonly EffectiveItem[]): string {
  const text = JSON.stringify(items.map((i) => [i.key, i.origin.policyId, i.origin.policyVersion]));
  return createHash('sha256').update(text).digest('base64url').slice(0, 16);
}
