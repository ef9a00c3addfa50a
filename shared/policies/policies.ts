import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Conflict, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { getDevice } from '../hierarchy/devices.ts';
import { selectSite } from '../hierarchy/store.ts';
import { effectivePoliciesOf, effectivePoliciesOfDevices } from './effective.ts';
import type { Origin, PolicyItem } from './resolve.ts';
import {
  type CreateAssignment,
  type CreateExemption,
  type CreatePolicy,
  checkItems,
  type PolicyKind,
  type putInheritance,
  type UpdatePolicy,
} from './schemas.ts';
import * as store from './store.ts';

const invalid = (path: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${path}`, message, code: 'custom' }]);

const actorOf = (principal: Principal): store.Actor => ({
  actorType: principal.actorType,
  id: principal.id,
  email: principal.email,
  name: principal.name,
});

/** Items checked against their kind's shapes: a 400 naming the item and field, nothing stored. */
async function checkedItems(
  db: Db,
  kind: PolicyKind,
  items: unknown[],
  owner: { partnerId: string; orgId: string | null },
  previous: readonly PolicyItem[] = [],
) {
  const parsed = checkItems(kind, items);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => ({
      path: ['body', 'items', ...issue.path].join('.'),
      message: issue.message,
      code: issue.code,
    }));
    throw ValidationFailed(`Invalid policy item: ${issues[0]!.path}: ${issues[0]!.message}`, issues);
  }
  const list = parsed.data as PolicyItem[];
  for (const [index, item] of list.entries()) {
    if (item.type === 'script' && !(await scriptOfOwner(db, String(item.scriptId), owner)))
      throw invalid(`items.${index}.scriptId`, 'scriptId is not a script this policy can run');
    if (item.type === 'automation' && !(await store.partnerAutomationExists(db, String(item.automationId), owner)))
      throw invalid(`items.${index}.automationId`, "automationId is not a partner automation of this policy's partner");
  }
  for (const [index, item] of list.entries())
    if (item.type === 'ring' && !(await groupsOfOwner(db, item.groupIds as string[], owner)))
      throw invalid(`items.${index}.groupIds`, 'groupIds names a device group this policy cannot reach');
  return kind === 'patching' ? withRingIds(list, previous) : list;
}

/** Each ring keeps its id while it keeps its key; a new ring gets a new one (an id the client gave is ignored). */
function withRingIds(list: PolicyItem[], previous: readonly PolicyItem[]): PolicyItem[] {
  const ids = new Map(previous.filter((i) => i.type === 'ring').map((i) => [i.key, i.id as string]));
  return list.map((item) => (item.type === 'ring' ? { ...item, id: ids.get(item.key) ?? randomUUID() } : item));
}

/** Live device groups of the policy's organization (or, for a partner library, of the partner's organizations). */
async function groupsOfOwner(db: Db, groupIds: string[], owner: { partnerId: string; orgId: string | null }) {
  if (groupIds.length === 0) return true;
  const { rows } = await db.query(
    `SELECT 1 FROM device_groups g JOIN organizations o ON o.id = g.org_id AND o.deleted_at IS NULL
      WHERE g.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:groupIds::jsonb)) AND o.partner_id = :partnerId::uuid
        AND (:orgId::uuid IS NULL OR g.org_id = :orgId::uuid)`,
    { groupIds, ...owner },
  );
  return rows.length === groupIds.length;
}

/** A live script of the partner's library or of the policy's organization. */
async function scriptOfOwner(db: Db, scriptId: string, owner: { partnerId: string; orgId: string | null }) {
  const { rows } = await db.query(
    `SELECT 1 FROM scripts WHERE id = :scriptId::uuid AND partner_id = :partnerId::uuid AND deleted_at IS NULL
        AND (org_id IS NULL OR org_id = :orgId::uuid)`,
    { scriptId, ...owner },
  );
  return rows.length > 0;
}

const policyResource = (policy: { id: string; name: string }) => ({
  resourceType: 'policy',
  resourceId: policy.id,
  resourceName: policy.name,
});

export async function reachablePolicy(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'policies:read');
  const policy = await store.selectPolicy(db, principal, id);
  if (!policy) throw NotFound('Policy');
  return policy;
}

/** A policy the principal may change: organization callers only their organization's own policies. */
async function writablePolicy(db: Db, principal: Principal, id: string) {
  const policy = await reachablePolicy(db, principal, id);
  requirePermission(principal, 'policies:write');
  if (principal.scope === 'organization' && policy.orgId !== principal.orgId)
    throw Forbidden("Organization users change only their organization's own policies");
  return policy;
}

export function listPolicies(
  db: Db,
  principal: Principal,
  query: Page & { kind?: string; orgId?: string; availability?: string },
) {
  requirePermission(principal, 'policies:read');
  return store.selectPolicies(db, principal, query, query);
}

const snapshot = (p: store.PolicyRow) => ({ kind: p.kind, name: p.name, version: p.version, items: p.items });

export async function createPolicy(db: Db, principal: Principal, body: CreatePolicy, audit: AuditContext) {
  requirePermission(principal, 'policies:write');
  let owner: { partnerId: string; orgId: string | null };
  if (body.orgId) {
    const org = await reachableOrganization(db, principal, body.orgId, 'policies:write');
    owner = { partnerId: org.partnerId, orgId: org.id };
  } else {
    if (principal.scope === 'organization')
      throw Forbidden('Organization users create policies of their organization (orgId), not partner libraries');
    const partnerId = principal.scope === 'platform' ? body.partnerId : principal.partnerId;
    if (!partnerId) throw invalid('partnerId', 'partnerId is required for a platform caller');
    const { rows } = await db.query('SELECT 1 FROM partners WHERE id = :partnerId::uuid', { partnerId });
    if (rows.length === 0) throw NotFound('Partner');
    owner = { partnerId, orgId: null };
  }
  if (body.partnerId && principal.scope !== 'platform')
    throw invalid('partnerId', 'Only platform callers give partnerId');
  const items = await checkedItems(db, body.kind, body.items, owner);
  return db.transaction(async (tx) => {
    const policy = await store.insertPolicy(
      tx,
      { ...owner, kind: body.kind, name: body.name, items },
      actorOf(principal),
    );
    await auditOwnedChange(tx, audit, policy, {
      action: 'policy.create',
      ...policyResource(policy),
      details: { after: snapshot(policy) },
    });
    return policy;
  });
}

/** A change of the items is a new version; audited as policy.update with what changed before and after. */
export async function updatePolicy(db: Db, principal: Principal, id: string, body: UpdatePolicy, audit: AuditContext) {
  const found = await writablePolicy(db, principal, id);
  const items = body.items ? await checkedItems(db, found.kind, body.items, found, found.items) : undefined;
  return db.transaction(async (tx) => {
    const before = await store.lockPolicy(tx, id);
    if (!before) throw NotFound('Policy');
    // Changed items of an automation policy add or remove automations wherever it is assigned.
    const evaluation = items
      ? await automationsBefore(tx, before, await store.selectAssignmentTargets(tx, id))
      : undefined;
    const after = await store.updatePolicyRow(tx, id, { name: body.name, items }, actorOf(principal));
    if (!after) throw NotFound('Policy');
    await auditOwnedChange(tx, audit, after, {
      action: 'policy.update',
      ...policyResource(after),
      details: { before: snapshot(before), after: snapshot(after) },
    });
    await auditAutomationEvaluation(tx, audit, after, { change: 'items' }, evaluation);
    return after;
  });
}

/** Its assignments, exemptions and monitor states go with it; its versions stay for the alerts naming them. */
export async function deletePolicy(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const policy = await writablePolicy(db, principal, id);
  await db.transaction(async (tx) => {
    // A deleted automation policy removes its automations wherever it was assigned.
    const evaluation = await automationsBefore(tx, policy, await store.selectAssignmentTargets(tx, id));
    if (!(await store.deletePolicyRow(tx, id))) throw NotFound('Policy');
    await auditOwnedChange(tx, audit, policy, {
      action: 'policy.delete',
      ...policyResource(policy),
      details: { before: snapshot(policy) },
    });
    await auditAutomationEvaluation(tx, audit, policy, { change: 'delete' }, evaluation);
  });
}

export async function listVersions(db: Db, principal: Principal, id: string, page: Page) {
  await reachablePolicy(db, principal, id);
  return store.selectVersions(db, id, page);
}

/**
 * A live target of the policy's partner that the principal reaches (404 otherwise, as another tenant's is): an
 * organization's policy is assigned within its organization only (400 naming targetId).
 */
async function targetOf(
  db: Db,
  principal: Principal,
  policy: store.PolicyRow,
  level: store.AssignmentRow['level'],
  targetId: string,
) {
  const target = await store.selectTarget(db, level, targetId);
  if (!target || target.partnerId !== policy.partnerId) throw NotFound('Target');
  if (target.orgId && !(await selectOrganization(db, principal, target.orgId))) throw NotFound('Target');
  if (level === 'partner' && principal.scope === 'organization') throw NotFound('Target');
  if (policy.orgId && (level === 'partner' || target.orgId !== policy.orgId))
    throw invalid('targetId', "An organization's policy applies within its organization only");
  return target;
}

export async function createAssignment(
  db: Db,
  principal: Principal,
  policyId: string,
  body: CreateAssignment,
  audit: AuditContext,
) {
  const policy = await writablePolicy(db, principal, policyId);
  const target = await targetOf(db, principal, policy, body.level, body.targetId);
  return db.transaction(async (tx) => {
    if (!(await store.lockPolicy(tx, policyId))) throw NotFound('Policy');
    const evaluation = await automationsBefore(tx, policy, [body]);
    const row = await store.insertAssignment(
      tx,
      {
        policyId,
        partnerId: policy.partnerId,
        orgId: target.orgId,
        kind: policy.kind,
        level: body.level,
        targetId: body.targetId,
        priority: body.priority,
        osTypes: body.osTypes ? [...new Set(body.osTypes)] : null,
        roles: body.roles ? [...new Set(body.roles)] : null,
      },
      actorOf(principal),
    );
    if (!row) throw Conflict(`The policy is already assigned to this ${body.level}`);
    const event = {
      action: 'policy.update',
      ...policyResource(policy),
      details: { assignment: { after: row } },
    };
    await auditOwnedChange(tx, audit, { partnerId: policy.partnerId, orgId: row.orgId }, event);
    await auditAutomationEvaluation(tx, audit, policy, { assignmentId: row.id }, evaluation);
    return row;
  });
}

/** Devices whose automations a change is evaluated for, at most this many. */
const maxEvaluatedDevices = 5000;

/** What applies to each device evaluated: its partner automations and the policy origin that brings each. */
type Evaluation = { devices: { id: string; orgId: string }[]; before: Map<string, Map<string, Origin>> } | undefined;

/** Devices resolved in one statement when a change's automations are evaluated. */
const evaluationChunk = 1000;

/**
 * The partner automations that apply to each device now (policy items of kind automation, through the resolver), in
 * one resolution per chunk of devices. A device that is no longer live has none.
 */
async function automationsOf(tx: Tx, deviceIds: readonly string[]): Promise<Map<string, Map<string, Origin>>> {
  const applied = new Map<string, Map<string, Origin>>();
  for (let start = 0; start < deviceIds.length; start += evaluationChunk) {
    const chunk = deviceIds.slice(start, start + evaluationChunk);
    const resolved = await effectivePoliciesOfDevices(tx, chunk, 'automation');
    for (const id of chunk) {
      const items = resolved.get(id)?.effective.items ?? [];
      applied.set(id, new Map(items.map((each) => [String(each.item.automationId), each.origin])));
    }
  }
  return applied;
}

/**
 * Before a change of what a partner's automation policies bring: what applies to each device the targets hold (at
 * most maxEvaluatedDevices of them).
 */
async function evaluationBefore(
  tx: Tx,
  partnerId: string,
  targets: { level: store.AssignmentRow['level']; targetId: string }[],
): Promise<Evaluation> {
  const devices = new Map<string, { id: string; orgId: string }>();
  for (const target of targets) {
    if (devices.size >= maxEvaluatedDevices) break;
    const found = await store.selectTargetDevices(
      tx,
      partnerId,
      target.level,
      target.targetId,
      maxEvaluatedDevices - devices.size,
    );
    for (const device of found) devices.set(device.id, device);
  }
  const before = await automationsOf(tx, [...devices.keys()]);
  return { devices: [...devices.values()], before };
}

/**
 * Before an automation policy, or assignments or exemptions of it, change: what applies to each device the targets
 * hold. Nothing for a policy of another kind.
 */
async function automationsBefore(
  tx: Tx,
  policy: store.PolicyRow,
  targets: { level: store.AssignmentRow['level']; targetId: string }[],
): Promise<Evaluation> {
  if (policy.kind !== 'automation' || targets.length === 0) return undefined;
  return evaluationBefore(tx, policy.partnerId, targets);
}

type Cause =
  | { assignmentId: string }
  | { exemptionId: string }
  | { change: 'items' | 'delete' }
  | { change: 'inheritance'; level: 'organization' | 'site'; targetId: string; block: boolean };

type DeviceChange = { deviceId: string; added: string[]; removed: string[] };

/**
 * After the change, in its transaction: `automation.policy.evaluate` in each organization where it added or removed an
 * automation for a device, naming what changed (an assignment, an exemption, the items, the policy's deletion, an
 * inheritance block), the devices and the automations added and removed. A change of one policy is filed under it;
 * an inheritance block, which reaches every policy, under each policy whose automations it added or removed.
 */
async function auditAutomationEvaluation(
  tx: Tx,
  audit: AuditContext,
  policy: store.PolicyRow | undefined,
  cause: Cause,
  evaluation: Evaluation,
) {
  if (!evaluation) return;
  // Per organization and policy: the policy's name and version, and each device's change.
  const rows = new Map<string, { orgId: string; policy: Pick<Origin, 'policyId' | 'policyName' | 'policyVersion'> }>();
  const changes = new Map<string, DeviceChange[]>();
  const note = (orgId: string, origin: Origin, deviceId: string, side: 'added' | 'removed', automationId: string) => {
    const owner = policy
      ? { policyId: policy.id, policyName: policy.name, policyVersion: policy.version }
      : { policyId: origin.policyId, policyName: origin.policyName, policyVersion: origin.policyVersion };
    const key = `${orgId}:${owner.policyId}`;
    if (!rows.has(key)) rows.set(key, { orgId, policy: owner });
    const list = changes.get(key) ?? [];
    changes.set(key, list);
    let change = list.at(-1);
    if (change?.deviceId !== deviceId) {
      change = { deviceId, added: [], removed: [] };
      list.push(change);
    }
    change[side].push(automationId);
  };
  const afterAll = await automationsOf(
    tx,
    evaluation.devices.map((device) => device.id),
  );
  for (const device of evaluation.devices) {
    const before = evaluation.before.get(device.id)!;
    const after = afterAll.get(device.id)!;
    for (const [id, origin] of after) if (!before.has(id)) note(device.orgId, origin, device.id, 'added', id);
    for (const [id, origin] of before) if (!after.has(id)) note(device.orgId, origin, device.id, 'removed', id);
  }
  for (const [key, { orgId, policy: owner }] of rows) {
    const devices = changes.get(key)!;
    await auditChange(tx, audit, {
      orgId,
      action: 'automation.policy.evaluate',
      resourceType: 'policy',
      resourceId: owner.policyId,
      resourceName: owner.policyName,
      details: {
        ...cause,
        policyVersion: owner.policyVersion,
        devices: devices.slice(0, 500),
        deviceCount: devices.length,
      },
    });
  }
}

export async function listAssignments(db: Db, principal: Principal, policyId: string, page: Page) {
  await reachablePolicy(db, principal, policyId);
  return store.selectAssignments(db, policyId, principal.scope === 'organization' ? principal.orgId : null, page);
}

/** The row, when the principal may change its policy and reach its organization; 404 otherwise. */
async function ownedRow<R extends { policyId: string; orgId: string | null }>(
  db: Db,
  principal: Principal,
  row: R | undefined,
  what: string,
) {
  if (!row) throw NotFound(what);
  const policy = await store.selectPolicy(db, principal, row.policyId);
  if (!policy) throw NotFound(what);
  if (principal.scope === 'organization' && row.orgId !== principal.orgId) throw NotFound(what);
  await writablePolicy(db, principal, row.policyId);
  return { row, policy };
}

export async function deleteAssignment(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const { row, policy } = await ownedRow(db, principal, await store.selectAssignment(db, id), 'Policy assignment');
  await db.transaction(async (tx) => {
    const evaluation = await automationsBefore(tx, policy, [row]);
    if (!(await store.deleteAssignmentRow(tx, id))) throw NotFound('Policy assignment');
    const event = { action: 'policy.update', ...policyResource(policy), details: { assignment: { before: row } } };
    await auditOwnedChange(tx, audit, { partnerId: policy.partnerId, orgId: row.orgId }, event);
    await auditAutomationEvaluation(tx, audit, policy, { assignmentId: row.id }, evaluation);
  });
}

export async function createExemption(
  db: Db,
  principal: Principal,
  policyId: string,
  body: CreateExemption,
  audit: AuditContext,
) {
  const policy = await writablePolicy(db, principal, policyId);
  if (!policy.items.some((item) => item.key === body.itemKey))
    throw invalid('itemKey', `The policy has no item ${body.itemKey}`);
  const target = await targetOf(db, principal, policy, body.level, body.targetId);
  return db.transaction(async (tx) => {
    if (!(await store.lockPolicy(tx, policyId))) throw NotFound('Policy');
    // An exempted item of an automation policy removes its automation from the devices the exemption holds.
    const evaluation = await automationsBefore(tx, policy, [body]);
    const row = await store.insertExemption(
      tx,
      { policyId, partnerId: policy.partnerId, orgId: target.orgId!, ...body },
      actorOf(principal),
    );
    if (!row) throw Conflict(`The item ${body.itemKey} is already exempted for this ${body.level}`);
    await auditChange(tx, audit, {
      orgId: row.orgId,
      action: 'policy.update',
      ...policyResource(policy),
      details: { exemption: { after: row } },
    });
    await auditAutomationEvaluation(tx, audit, policy, { exemptionId: row.id }, evaluation);
    return row;
  });
}

export async function listExemptions(db: Db, principal: Principal, policyId: string, page: Page) {
  await reachablePolicy(db, principal, policyId);
  return store.selectExemptions(db, policyId, principal.scope === 'organization' ? principal.orgId : null, page);
}

export async function deleteExemption(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const { row, policy } = await ownedRow(db, principal, await store.selectExemption(db, id), 'Policy exemption');
  await db.transaction(async (tx) => {
    const evaluation = await automationsBefore(tx, policy, [row]);
    if (!(await store.deleteExemptionRow(tx, id))) throw NotFound('Policy exemption');
    await auditChange(tx, audit, {
      orgId: row.orgId,
      action: 'policy.update',
      ...policyResource(policy),
      details: { exemption: { before: row } },
    });
    await auditAutomationEvaluation(tx, audit, policy, { exemptionId: row.id }, evaluation);
  });
}

/**
 * Blocks (or unblocks) inheritance at an organization or one of its sites. It keeps the partner's assignments from
 * the organization's devices, so only partner and platform callers set it; audited as policy.update.
 */
export async function putInheritanceBlock(
  db: Db,
  principal: Principal,
  orgId: string,
  siteId: string | null,
  body: z.output<typeof putInheritance>,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, 'policies:write');
  if (principal.scope === 'organization')
    throw Forbidden("Blocking inheritance keeps the partner's policies out: partner users set it");
  const site = siteId ? await selectSite(db, orgId, siteId) : undefined;
  if (siteId && !site) throw NotFound('Site');
  await db.transaction(async (tx) => {
    // A block keeps the partner's automation policies from the devices it holds, an unblock brings them back.
    const target = { level: siteId ? ('site' as const) : ('organization' as const), targetId: siteId ?? orgId };
    const evaluation = (await store.automationPoliciesAssigned(tx, org.partnerId))
      ? await evaluationBefore(tx, org.partnerId, [target])
      : undefined;
    const changed = await store.updateInheritance(tx, orgId, siteId, body.block);
    if (!changed) throw NotFound(siteId ? 'Site' : 'Organization');
    if (changed.before === body.block) return;
    const cause = { change: 'inheritance' as const, ...target, block: body.block };
    await auditAutomationEvaluation(tx, audit, undefined, cause, evaluation);
    await auditChange(tx, audit, {
      orgId,
      action: 'policy.update',
      resourceType: siteId ? 'site' : 'organization',
      resourceId: siteId ?? orgId,
      resourceName: site?.name ?? org.name,
      details: { inheritance: { before: { block: changed.before }, after: { block: body.block } } },
    });
  });
  return { block: body.block };
}

/** GET /devices/{id}/effective-policies: each effective item with where it came from and what it overrode. */
export async function getEffectivePolicies(db: Db, principal: Principal, deviceId: string, kind: PolicyKind) {
  const device = await getDevice(db, principal, deviceId);
  requirePermission(principal, 'policies:read');
  const resolved = await effectivePoliciesOf(db, device.id, kind);
  if (!resolved) throw NotFound('Device');
  const { effective } = resolved;
  return {
    deviceId: device.id,
    kind,
    configVersion: effective.configVersion,
    items: effective.items,
    exempted: effective.exempted,
    blocked: effective.blocked,
  };
}
