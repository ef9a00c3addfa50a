import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { assertPartnerReached } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { NotFound, ValidationFailed } from '../errors.ts';
import { type PutDefaults, type Severity, severities } from './schemas.ts';
import * as store from './store.ts';

/**
 * Notification defaults: channel ids per severity and an escalation policy, for the partner and per organization. An
 * organization's replace the partner's severity by severity; what it has none of its own for is the partner's.
 */
function effective(own: store.DefaultsRow | undefined, partner: store.DefaultsRow | undefined, isOrg: boolean) {
  const inherited: (Severity | 'escalationPolicyId')[] = [];
  const channels = Object.fromEntries(
    severities.map((severity) => {
      const mine = own?.channels[severity];
      if (mine === undefined && isOrg) inherited.push(severity);
      return [severity, mine ?? (isOrg ? (partner?.channels[severity] ?? []) : [])];
    }),
  ) as Record<Severity, string[]>;
  let escalationPolicyId = own?.escalationPolicyId ?? null;
  if (escalationPolicyId === null && isOrg) {
    escalationPolicyId = partner?.escalationPolicyId ?? null;
    inherited.push('escalationPolicyId');
  }
  return { channels, escalationPolicyId, inherited };
}

async function organization(db: Db, principal: Principal, orgId: string) {
  const org = await selectOrganization(db, principal, orgId);
  if (!org) throw NotFound('Organization');
  return { partnerId: org.partnerId, orgId: org.id, name: org.name };
}

export async function getOrgDefaults(db: Db, principal: Principal, orgId: string) {
  requirePermission(principal, 'alerts:read');
  const owner = await organization(db, principal, orgId);
  const [own, partner] = await Promise.all([
    store.selectDefaults(db, owner),
    store.selectDefaults(db, { partnerId: owner.partnerId, orgId: null }),
  ]);
  return effective(own, partner, true);
}

export async function getPartnerDefaults(db: Db, principal: Principal, partnerId: string) {
  requirePermission(principal, 'alerts:read');
  await assertPartnerReached(db, principal, partnerId);
  return effective(await store.selectDefaults(db, { partnerId, orgId: null }), undefined, false);
}

export async function putOrgDefaults(
  db: Db,
  principal: Principal,
  orgId: string,
  input: PutDefaults,
  audit: AuditContext,
) {
  const owner = await organization(db, principal, orgId);
  await save(db, principal, { partnerId: owner.partnerId, orgId: owner.orgId }, owner.name, input, audit);
  return getOrgDefaults(db, principal, orgId);
}

export async function putPartnerDefaults(
  db: Db,
  principal: Principal,
  partnerId: string,
  input: PutDefaults,
  audit: AuditContext,
) {
  await assertPartnerReached(db, principal, partnerId);
  await save(db, principal, { partnerId, orgId: null }, null, input, audit);
  return getPartnerDefaults(db, principal, partnerId);
}

/** Every channel and the policy named must serve the owner (another tenant's id reads as unknown): 400 naming it. */
async function save(
  db: Db,
  principal: Principal,
  owner: store.Owner,
  name: string | null,
  input: PutDefaults,
  audit: AuditContext,
) {
  requirePermission(principal, 'integrations:manage');
  for (const severity of severities) {
    const unknown = await store.selectUnknownChannelIds(db, owner, input.channels[severity] ?? []);
    if (unknown.length > 0)
      throw ValidationFailed(`Unknown notification channel ${unknown[0]}`, [
        { path: `body.channels.${severity}`, message: `Unknown notification channel ${unknown[0]}`, code: 'custom' },
      ]);
  }
  const escalationPolicyId = input.escalationPolicyId ?? null;
  if (escalationPolicyId && !(await store.policyServes(db, owner, escalationPolicyId)))
    throw ValidationFailed('Unknown escalation policy', [
      { path: 'body.escalationPolicyId', message: 'Unknown escalation policy', code: 'custom' },
    ]);
  const channels = Object.fromEntries(
    Object.entries(input.channels)
      .filter(([, list]) => list !== undefined)
      .map(([severity, list]) => [severity, [...new Set(list)]]),
  );
  await db.transaction(async (tx) => {
    const before = await store.selectDefaults(tx, owner);
    await store.upsertDefaults(tx, owner, { channels, escalationPolicyId });
    await auditOwnedChange(tx, audit, owner, {
      action: 'notification_defaults.update',
      resourceType: owner.orgId ? 'organization' : 'partner',
      resourceId: owner.orgId ?? owner.partnerId,
      resourceName: name,
      details: { before: before ?? null, after: { channels, escalationPolicyId } },
    });
  });
}
