import { randomBytes } from 'node:crypto';
import { changedFields } from '../audit/changes.ts';
import { auditPartnerChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { sealSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, ValidationFailed } from '../errors.ts';
import { logger } from '../logger.ts';
import { configurationProblem } from '../outbound/address.ts';
import type { CreateIntegration, UpdateIntegration } from './schemas.ts';
import * as store from './store.ts';

/** PSA integrations are the partner's: partner users (and the platform) with integrations:manage. */
function assertPartnerManager(principal: Principal): void {
  requirePermission(principal, 'integrations:manage');
  if (principal.scope === 'organization') throw Forbidden('PSA integrations are managed by partner users');
}

/**
 * A URL the service will call, checked with what its name resolves to now (the schema checked its text): a 400
 * naming `url` and the reason. Each delivery checks again.
 */
async function assertOutboundUrl(url: string): Promise<void> {
  const problem = await configurationProblem(url);
  if (problem)
    throw ValidationFailed(`Refused URL: ${problem}`, [
      { path: 'body.url', message: `Refused URL: ${problem}`, code: 'custom' },
    ]);
}

/** A secret as stored: sealed under the seal key; in the clear (marked) only where no seal key is set. */
function storedSecret(secret: string): store.StoredSecret {
  const sealed = sealSecret(secret);
  if (sealed) return { secret: sealed, sealed: true };
  logger.warn('ENROLLMENT_KEY_SEAL_KEY is not set: a PSA secret is stored in the clear');
  return { secret, sealed: false };
}

/** 32 random bytes, base64url: the secret generated when the caller gives none, shown once. */
const generatedSecret = () => randomBytes(32).toString('base64url');

export async function createIntegration(db: Db, principal: Principal, input: CreateIntegration, audit: AuditContext) {
  assertPartnerManager(principal);
  const partnerId = principal.scope === 'platform' ? input.partnerId : principal.partnerId;
  if (!partnerId)
    throw ValidationFailed('partnerId is required', [
      { path: 'body.partnerId', message: 'Platform callers name the partner', code: 'custom' },
    ]);
  await assertOutboundUrl(input.url);
  const generated = input.secret === undefined ? generatedSecret() : undefined;
  const created = await db.transaction(async (tx) => {
    const row = await store.insertIntegration(tx, partnerId, input, storedSecret(input.secret ?? generated!));
    await auditIntegration(tx, audit, row, 'integration.create', {
      after: { name: row.name, url: row.url, severities: row.severities },
      secretGenerated: generated !== undefined,
    });
    return row;
  });
  return generated === undefined ? created : { ...created, secret: generated };
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
  if (change.url !== undefined) await assertOutboundUrl(change.url);
  const { secret, rotateSecret, ...fields } = change;
  const generated = rotateSecret ? generatedSecret() : undefined;
  const newSecret = secret ?? generated;
  const updated = await db.transaction(async (tx) => {
    const row = await store.updateIntegrationRow(
      tx,
      id,
      fields,
      newSecret === undefined ? undefined : storedSecret(newSecret),
    );
    await auditIntegration(tx, audit, row, 'integration.update', {
      ...changedFields(before, row, ['name', 'url', 'severities']),
      secretChanged: newSecret !== undefined,
    });
    return row;
  });
  return generated === undefined ? updated : { ...updated, secret: generated };
}

/** Soft delete: its deliveries' log stays; bindings that named it fall back to tickets. */
export async function deleteIntegration(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const integration = await getIntegration(db, principal, id);
  await db.transaction(async (tx) => {
    await store.softDeleteIntegration(tx, id);
    await auditIntegration(tx, audit, integration, 'integration.delete', {});
  });
}

function auditIntegration(
  tx: Tx,
  audit: AuditContext,
  integration: store.IntegrationRow,
  action: string,
  details: Record<string, unknown>,
) {
  return auditPartnerChange(tx, audit, integration.partnerId, {
    action,
    resourceType: 'psa_integration',
    resourceId: integration.id,
    resourceName: integration.name,
    details,
  });
}
