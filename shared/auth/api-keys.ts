import type { z } from 'zod';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, NotFound } from '../errors.ts';
import type { Principal } from './principal.ts';
import { reachableOrganization } from './reachable-organization.ts';
import type { createApiKey as createSchema } from './schemas.ts';
import { hashSecret, newSecret, secretPrefixes, shownPart } from './secrets.ts';
import * as store from './store.ts';

/**
 * Writes a key's audit event in the change's transaction: the audit writer's auditChange, handed in by the route, since
 * the audit domain itself depends on this one.
 */
export type AuditKeyChange = (
  tx: Tx,
  event: {
    orgId: string;
    action: string;
    resourceType: string;
    resourceId: string;
    resourceName: string;
    details: Record<string, unknown>;
  },
) => Promise<void>;

/** Audited as api_key.create (its name, role and shown prefix; never the key). */
export async function createApiKey(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof createSchema>,
  audit: AuditKeyChange,
) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  // A service key writes the organization's trail: the organization's own users must not mint one and report as anybody.
  if (input.role === 'org_service' && principal.scope === 'organization')
    throw Forbidden('Only partner and platform users create org_service keys');
  const key = newSecret(secretPrefixes.apiKey);
  const created = await db.transaction(async (tx) => {
    const row = await store.insertApiKey(tx, {
      orgId,
      name: input.name,
      role: input.role,
      keyPrefix: shownPart(key),
      secretHash: hashSecret(key),
      createdBy: principal.id,
    });
    await audit(tx, {
      orgId,
      action: 'api_key.create',
      resourceType: 'api_key',
      resourceId: row.id,
      resourceName: row.name,
      details: { after: { name: row.name, role: row.role, keyPrefix: row.keyPrefix } },
    });
    return row;
  });
  return { ...created, key };
}

export async function listApiKeys(db: Db, principal: Principal, orgId: string, page: Page) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  return store.selectApiKeys(db, orgId, page);
}

/** Audited as api_key.revoke when it revokes the key (a repeat changes nothing and writes nothing). */
export async function revokeApiKey(db: Db, principal: Principal, orgId: string, keyId: string, audit: AuditKeyChange) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  await db.transaction(async (tx) => {
    const revoked = await store.updateApiKeyRevoked(tx, orgId, keyId);
    if (!revoked) throw NotFound('API key');
    if (revoked.revokedNow)
      await audit(tx, {
        orgId,
        action: 'api_key.revoke',
        resourceType: 'api_key',
        resourceId: keyId,
        resourceName: revoked.name,
        details: { role: revoked.role },
      });
  });
}
