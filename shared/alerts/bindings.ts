import { auditPartnerChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import type { PutAlertBinding } from './schemas.ts';
import * as store from './store.ts';

/**
 * Where alerts go: per organization, else the partner-wide default, else the platform's own
 * tickets. An organization's binding is read with alerts:read and set with integrations:manage.
 */
export async function getOrgBinding(db: Db, principal: Principal, orgId: string) {
  requirePermission(principal, 'alerts:read');
  const org = await selectOrganization(db, principal, orgId);
  if (!org) throw NotFound('Organization');
  return store.selectEffectiveBinding(db, org.id);
}

export async function putOrgBinding(
  db: Db,
  principal: Principal,
  orgId: string,
  binding: PutAlertBinding,
  audit: AuditContext,
) {
  const org = await selectOrganization(db, principal, orgId);
  if (!org) throw NotFound('Organization');
  requirePermission(principal, 'integrations:manage');
  const after = await db.transaction(async (tx) => {
    const before = await store.selectEffectiveBinding(tx, org.id);
    const saved = await save(tx, org.partnerId, org.id, binding);
    await auditChange(tx, audit, {
      orgId: org.id,
      ...bindingEvent(before, saved),
      resourceId: org.id,
      resourceName: org.name,
    });
    return saved;
  });
  return { ...after, inherited: false };
}

/** The partner-wide default: partner users of that partner (or the platform). */
export async function getPartnerBinding(db: Db, principal: Principal, partnerId: string) {
  assertPartner(principal, partnerId);
  requirePermission(principal, 'alerts:read');
  const binding = await store.selectBinding(db, partnerId, null);
  return { ...(binding ?? { target: 'tickets' as const, integrationId: null }), inherited: false };
}

export async function putPartnerBinding(
  db: Db,
  principal: Principal,
  partnerId: string,
  binding: PutAlertBinding,
  audit: AuditContext,
) {
  assertPartner(principal, partnerId);
  requirePermission(principal, 'integrations:manage');
  const after = await db.transaction(async (tx) => {
    const before = (await store.selectBinding(tx, partnerId, null)) ?? { target: 'tickets', integrationId: null };
    const saved = await save(tx, partnerId, null, binding);
    await auditPartnerChange(tx, audit, partnerId, { ...bindingEvent(before, saved), resourceId: partnerId });
    return saved;
  });
  return { ...after, inherited: false };
}

function assertPartner(principal: Principal, partnerId: string): void {
  if (principal.scope === 'platform') return;
  if (principal.scope !== 'partner' || principal.partnerId !== partnerId) throw NotFound('Partner');
}

/** A PSA binding names a live integration of the same partner (another's is 404). */
async function save(db: Db, partnerId: string, orgId: string | null, binding: PutAlertBinding) {
  const integrationId = binding.integrationId ?? null;
  if (integrationId) {
    const integration = await store.selectDeliveryTarget(db, integrationId);
    if (integration?.partnerId !== partnerId) throw NotFound('PSA integration');
  }
  await store.upsertBinding(db, { partnerId, orgId, target: binding.target, integrationId });
  return { target: binding.target, integrationId };
}

function bindingEvent(
  before: { target: string; integrationId: string | null },
  after: { target: string; integrationId: string | null },
) {
  return {
    action: 'alert_binding.update',
    resourceType: 'alert_binding',
    details: {
      before: { target: before.target, integrationId: before.integrationId },
      after: { target: after.target, integrationId: after.integrationId },
    },
  };
}
