import { changedFields } from '../audit/changes.ts';
import { writePartnerRouteAudit } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, ValidationFailed } from '../errors.ts';
import type { CreateIntegration, UpdateIntegration } from './schemas.ts';
import * as store from './store.ts';

/** PSA integrations are the partner's (issue 17): partner users (and the platform) with integrations:manage. */
function assertPartnerManager(principal: Principal): void {
  requirePermission(principal, 'integrations:manage');
  if (principal.scope === 'organization') throw Forbidden('PSA integrations are managed by partner users');
}

export async function createIntegration(db: Db, principal: Principal, input: CreateIntegration, audit: AuditContext) {
  assertPartnerManager(principal);
  const partnerId = principal.scope === 'platform' ? input.partnerId : principal.partnerId;
  if (!partnerId)
    throw ValidationFailed('partnerId is required', [
      { path: 'body.partnerId', message: 'Platform callers name the partner', code: 'custom' },
    ]);
  const created = await store.insertIntegration(db, partnerId, input);
  await auditIntegration(db, audit, created, 'integration.create', {
    after: { name: created.name, url: created.url, severities: created.severities },
  });
  return created;
}

export function listIntegrations(db: Db, principal: Principal, page: Page) {
  assertPartnerManager(principal);
  return store.selectIntegrations(db, principal, page);
}

export async function getIntegration(db: Db, principal: Principal, id: string) {
  assertPartnerManager(principal);
  return assertReachable(await store.selectIntegration(db, principal, id), 'PSA integration');
}

export async function updateIntegration(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateIntegration,
  audit: AuditContext,
) {
  const before = await getIntegration(db, principal, id);
  const updated = await store.updateIntegrationRow(db, id, change);
  await auditIntegration(db, audit, updated, 'integration.update', {
    ...changedFields(before, updated, ['name', 'url', 'severities']),
    secretChanged: change.secret !== undefined,
  });
  return updated;
}

/** Soft delete: its deliveries' log stays; bindings that named it fall back to tickets. */
export async function deleteIntegration(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const integration = await getIntegration(db, principal, id);
  await store.softDeleteIntegration(db, id);
  await auditIntegration(db, audit, integration, 'integration.delete', {});
}

function auditIntegration(
  db: Db,
  audit: AuditContext,
  integration: store.IntegrationRow,
  action: string,
  details: Record<string, unknown>,
) {
  return writePartnerRouteAudit(db, audit, integration.partnerId, {
    action,
    resourceType: 'psa_integration',
    resourceId: integration.id,
    resourceName: integration.name,
    details,
  });
}
