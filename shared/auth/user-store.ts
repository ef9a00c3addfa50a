import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { Principal } from './principal.ts';
import type { UserRecordRole, UserRow } from './user-schemas.ts';

const userColumns = `u.id, u.partner_id AS "partnerId", u.org_id AS "orgId", u.email, u.name, u.role,
  u.created_at AS "createdAt", u.updated_at AS "updatedAt"`;

/** The users the principal may reach: all for platform scope, the partner's, or the one organization's. */
const userTenantSql = `(:tenantScope::text = 'platform'
  OR (:tenantScope::text = 'partner' AND u.partner_id = :tenantPartnerId::uuid)
  OR (:tenantScope::text = 'organization' AND u.org_id = :tenantOrgId::uuid))`;

const tenant = (principal: Principal) => ({
  tenantScope: principal.scope,
  tenantPartnerId: principal.partnerId,
  tenantOrgId: principal.orgId,
});

/** Inserts a live user; undefined when a live user already has this e-mail address. */
export function insertUser(
  db: Db,
  row: {
    partnerId: string;
    orgId: string | null;
    email: string;
    name: string | null;
    role: UserRecordRole;
    createdBy: string | null;
  },
): Promise<UserRow | undefined> {
  return one<UserRow>(
    db,
    `INSERT INTO users AS u (partner_id, org_id, email, name, role, created_by)
     VALUES (:partnerId::uuid, :orgId::uuid, :email::text, :name::text, :role::text, :createdBy::uuid)
     ON CONFLICT (lower(email)) WHERE deleted_at IS NULL DO NOTHING
     RETURNING ${userColumns}`,
    row,
  );
}

/** The live user with this e-mail address, whoever's (sign-in and bootstrap look users up this way). */
export function selectUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return one<UserRow>(
    db,
    `SELECT ${userColumns} FROM users u WHERE lower(u.email) = lower(:email::text) AND u.deleted_at IS NULL`,
    { email },
  );
}

/** The live user if the principal may reach it, locked for a change when `forUpdate`. */
export function selectUser(db: Db, principal: Principal, id: string, forUpdate = false): Promise<UserRow | undefined> {
  return one<UserRow>(
    db,
    `SELECT ${userColumns} FROM users u WHERE u.id = :id::uuid AND u.deleted_at IS NULL AND ${userTenantSql}
     ${forUpdate ? 'FOR UPDATE' : ''}`,
    { id, ...tenant(principal) },
  );
}

export function selectUsers(db: Db, principal: Principal, filter: { orgId?: string; email?: string }, page: Page) {
  return selectPage<UserRow>(
    db,
    userColumns,
    `users u WHERE u.deleted_at IS NULL AND ${userTenantSql}
       AND (:orgId::uuid IS NULL OR u.org_id = :orgId::uuid)
       AND (:email::text IS NULL OR lower(u.email) = lower(:email::text))`,
    'lower(u.email), u.id',
    { ...tenant(principal), orgId: filter.orgId ?? null, email: filter.email ?? null },
    page,
  );
}

export function updateUser(
  db: Db,
  id: string,
  change: { role: UserRecordRole; orgId: string | null; name: string | null },
): Promise<UserRow | undefined> {
  return one<UserRow>(
    db,
    `UPDATE users u SET role = :role::text, org_id = :orgId::uuid, name = :name::text, updated_at = now()
      WHERE u.id = :id::uuid RETURNING ${userColumns}`,
    { id, ...change },
  );
}

export function softDeleteUser(db: Db, id: string): Promise<UserRow | undefined> {
  return one<UserRow>(
    db,
    `UPDATE users u SET deleted_at = now(), updated_at = now() WHERE u.id = :id::uuid AND u.deleted_at IS NULL
     RETURNING ${userColumns}`,
    { id },
  );
}
