import type { z } from 'zod';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, NotFound } from '../errors.ts';
import type { Principal } from './principal.ts';
import { reachableOrganization } from './reachable-organization.ts';
import type { createApiKey as createSchema } from './schemas.ts';
import { hashSecret, newSecret, secretPrefixes, shownPart } from './secrets.ts';
import * as store from './store.ts';

export async function createApiKey(db: Db, principal: Principal, orgId: string, input: z.output<typeof createSchema>) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  // A service key writes the organization's trail: the organization's own users must not mint one and report as anybody.
  if (input.role === 'org_service' && principal.scope === 'organization')
    throw Forbidden('Only partner and platform users create org_service keys');
  const key = newSecret(secretPrefixes.apiKey);
  const created = await store.insertApiKey(db, {
    orgId,
    name: input.name,
    role: input.role,
    keyPrefix: shownPart(key),
    secretHash: hashSecret(key),
    createdBy: principal.id,
  });
  return { ...created, key };
}

export async function listApiKeys(db: Db, principal: Principal, orgId: string, page: Page) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  return store.selectApiKeys(db, orgId, page);
}

export async function revokeApiKey(db: Db, principal: Principal, orgId: string, keyId: string) {
  await reachableOrganization(db, principal, orgId, 'api-keys:manage');
  if (!(await store.updateApiKeyRevoked(db, orgId, keyId))) throw NotFound('API key');
}
