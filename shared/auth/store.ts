import { type Db, one } from '../db/db.ts';
import { agentKeySql, type StoredKey } from '../db/idempotency.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { ApiKeyRole, Role } from './permissions.ts';
import type { Principal } from './principal.ts';
import { hashSecret } from './secrets.ts';
import { orgTenantSql, tenantParams } from './tenancy.ts';

export interface ApiKeyRow {
  id: string;
  orgId: string;
  partnerId: string;
  name: string;
  role: Role;
}

/** The live API key with this secret, of a live organization. */
export function selectApiKey(db: Db, secret: string): Promise<ApiKeyRow | undefined> {
  return one<ApiKeyRow & Record<string, unknown>>(
    db,
    `SELECT k.id, k.org_id AS "orgId", o.partner_id AS "partnerId", k.name, k.role
       FROM api_keys k JOIN organizations o ON o.id = k.org_id
      WHERE k.secret_hash = :hash::text AND k.revoked_at IS NULL AND o.deleted_at IS NULL`,
    { hash: hashSecret(secret) },
  );
}

export interface AgentTokenRow {
  agentId: string;
  deviceId: string;
  orgId: string;
}

const agentByToken = (columns: string) =>
  `SELECT a.id AS "agentId", d.id AS "deviceId", d.org_id AS "orgId"${columns}
     FROM agents a
     JOIN devices d ON d.id = a.device_id
     JOIN organizations o ON o.id = d.org_id
    WHERE a.token_hash = :hash::text AND a.revoked_at IS NULL AND d.deleted_at IS NULL AND o.deleted_at IS NULL`;

/** The agent holding the token of this hash, if neither it, its device nor its organization is revoked or deleted. */
export function selectAgentByToken(db: Db, tokenHash: string): Promise<AgentTokenRow | undefined> {
  return one<AgentTokenRow & Record<string, unknown>>(db, agentByToken(''), { hash: tokenHash });
}

/**
 * selectAgentByToken of a request sent with an Idempotency-Key, and in the same statement what the agent's key holds
 * (shared/db/idempotency.ts storedAnswer): a keyed upload's first statement.
 */
export function selectAgentAndKey(
  db: Db,
  tokenHash: string,
  keyDigest: string,
): Promise<(AgentTokenRow & { stored: StoredKey | null }) | undefined> {
  return one<AgentTokenRow & { stored: StoredKey | null } & Record<string, unknown>>(
    db,
    agentByToken(`, ${agentKeySql} AS stored`),
    {
      hash: tokenHash,
      keyDigest,
    },
  );
}

/** An organization's API key as listed: never the key itself, only its first characters. */
type ApiKeyListRow = {
  id: string;
  orgId: string;
  name: string;
  role: ApiKeyRole;
  keyPrefix: string;
  revokedAt: Date | null;
  createdAt: Date;
};

const apiKeyColumns = `k.id, k.org_id AS "orgId", k.name, k.role, k.key_prefix AS "keyPrefix", k.revoked_at AS "revokedAt", k.created_at AS "createdAt"`;

export async function insertApiKey(
  db: Db,
  key: { orgId: string; name: string; role: ApiKeyRole; keyPrefix: string; secretHash: string; createdBy: string },
): Promise<ApiKeyListRow> {
  const created = await one<ApiKeyListRow>(
    db,
    `INSERT INTO api_keys AS k (org_id, name, role, key_prefix, secret_hash, created_by)
     VALUES (:orgId::uuid, :name::text, :role::text, :keyPrefix::text, :secretHash::text, :createdBy::uuid)
     RETURNING ${apiKeyColumns}`,
    key,
  );
  return created!;
}

export function selectApiKeys(db: Db, orgId: string, page: Page) {
  return selectPage<ApiKeyListRow>(
    db,
    apiKeyColumns,
    'api_keys k WHERE k.org_id = :orgId::uuid',
    'k.created_at DESC, k.id',
    { orgId },
    page,
  );
}

/** Revokes a key of the organization: undefined when it has none such; `revokedNow` false when it was already. */
export function updateApiKeyRevoked(db: Db, orgId: string, keyId: string) {
  return one<{ name: string; role: string; revokedNow: boolean }>(
    db,
    `WITH k AS (
       SELECT id, revoked_at IS NULL AS live FROM api_keys WHERE id = :keyId::uuid AND org_id = :orgId::uuid FOR UPDATE
     )
     UPDATE api_keys a SET revoked_at = COALESCE(a.revoked_at, now()) FROM k WHERE a.id = k.id
     RETURNING a.name, a.role, k.live AS "revokedNow"`,
    { orgId, keyId },
  );
}

// Organizations: every domain reads them to scope its rows, so the lookup sits below them all.

export type OrganizationRow = {
  id: string;
  partnerId: string;
  name: string;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
};

export const orgColumns = `o.id, o.partner_id AS "partnerId", o.name, o.external_id AS "externalId", o.created_at AS "createdAt", o.updated_at AS "updatedAt"`;

/** The live organization if the principal may reach it. */
export function selectOrganization(db: Db, principal: Principal, id: string) {
  return one<OrganizationRow>(
    db,
    `SELECT ${orgColumns} FROM organizations o WHERE o.id = :id::uuid AND o.deleted_at IS NULL AND ${orgTenantSql('o')}`,
    {
      id,
      ...tenantParams(principal),
    },
  );
}
