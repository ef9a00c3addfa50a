import { changedFields } from '../audit/changes.ts';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { assertOwnerEditable, type OwnedKind, writableOwner } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { ValidationFailed } from '../errors.ts';
import type { CreatePolicy, ListQuery, Step, UpdatePolicy } from './schemas.ts';
import * as store from './store.ts';

const escalationPolicies: OwnedKind = {
  permission: 'integrations:manage',
  one: 'escalation policy',
  many: 'escalation policies',
};

/** Each step's channels serve the policy's owner: 400 naming the step's channelIds otherwise. */
async function assertStepChannels(db: Db, owner: store.Owner, steps: Step[]): Promise<void> {
  for (const [index, step] of steps.entries()) {
    const unknown = await store.selectUnknownChannelIds(db, owner, step.channelIds);
    if (unknown.length > 0)
      throw ValidationFailed(`Unknown notification channel ${unknown[0]}`, [
        {
          path: `body.steps.${index}.channelIds`,
          message: `Unknown notification channel ${unknown[0]}`,
          code: 'custom',
        },
      ]);
  }
}

const event = (row: store.PolicyRow, action: string, details: Record<string, unknown>) => ({
  action,
  resourceType: 'escalation_policy',
  resourceId: row.id,
  resourceName: row.name,
  details,
});

export async function createPolicy(db: Db, principal: Principal, input: CreatePolicy, audit: AuditContext) {
  const owner = await writableOwner(db, principal, input, escalationPolicies);
  await assertStepChannels(db, owner, input.steps);
  return db.transaction(async (tx) => {
    const row = await store.insertPolicy(tx, owner, input);
    await auditOwnedChange(tx, audit, owner, event(row, 'escalation_policy.create', { after: { steps: row.steps } }));
    return row;
  });
}

export function listPolicies(db: Db, principal: Principal, query: ListQuery) {
  requirePermission(principal, 'alerts:read');
  return store.selectPolicies(db, principal, query.orgId, query);
}

export async function getPolicy(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'alerts:read');
  return assertReachable(await store.selectPolicy(db, principal, id), 'Escalation policy');
}

export async function updatePolicy(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdatePolicy,
  audit: AuditContext,
) {
  const before = await getPolicy(db, principal, id);
  assertOwnerEditable(principal, before, escalationPolicies);
  if (change.steps) await assertStepChannels(db, before, change.steps);
  return db.transaction(async (tx) => {
    const row = await store.updatePolicyRow(tx, id, change);
    await auditOwnedChange(
      tx,
      audit,
      before,
      event(row, 'escalation_policy.update', changedFields(before, row, ['name', 'steps'])),
    );
    return row;
  });
}

/** Soft delete: defaults naming it stop naming it; escalations under way find it gone and stop. */
export async function deletePolicy(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const policy = await getPolicy(db, principal, id);
  assertOwnerEditable(principal, policy, escalationPolicies);
  await db.transaction(async (tx) => {
    await store.softDeletePolicy(tx, id);
    await auditOwnedChange(
      tx,
      audit,
      policy,
      event(policy, 'escalation_policy.delete', { before: { steps: policy.steps } }),
    );
  });
}
