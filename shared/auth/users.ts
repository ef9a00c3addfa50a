/**
 * The users API: a partner's people and their roles, which an identity provider's token hook puts into their tokens.
 * Every change is audited in its own transaction: user.create, user.permission.change, user.delete. With the stack's
 * own user pool, inviting a user makes their login and deleting one removes it (./logins.ts).
 */
import type { z } from 'zod';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Conflict, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { inviteLogin, removeLogin } from './logins.ts';
import type { Principal } from './principal.ts';
import { selectOrganization } from './store.ts';
import { assertReachable, requirePermission } from './tenancy.ts';
import {
  type changeUser,
  type createUser,
  isOrganizationRole,
  type UserRecordRole,
  type UserRow,
} from './user-schemas.ts';
import * as store from './user-store.ts';

/** Writes a user change's audit event in its transaction (handed in by the route: audit depends on this domain). */
export type AuditUserChange = (
  tx: Tx,
  user: UserRow,
  event: { action: 'user.create' | 'user.permission.change' | 'user.delete'; details: Record<string, unknown> },
) => Promise<void>;

const invalid = (path: string, message: string) =>
  ValidationFailed(`Invalid body: ${message}`, [{ path, message, code: 'custom' }]);

/** What a role and organization may be for a user of `partnerId`, as the principal may grant it. */
async function checkPlacement(
  db: Db,
  principal: Principal,
  partnerId: string,
  role: UserRecordRole,
  orgId: string | null,
): Promise<void> {
  if (!isOrganizationRole(role)) {
    if (orgId) throw invalid('body.orgId', `A partner role (${role}) belongs to no organization: leave orgId out`);
    if (principal.scope === 'organization') throw Forbidden('Only partner and platform users grant partner roles');
    return;
  }
  if (!orgId) throw invalid('body.orgId', `An organization role (${role}) needs orgId`);
  const org = await selectOrganization(db, principal, orgId);
  if (!org || org.partnerId !== partnerId) throw NotFound('Organization');
}

function userOf(row: UserRow) {
  return { email: row.email, name: row.name, role: row.role, orgId: row.orgId };
}

export async function createUserRecord(
  db: Db,
  principal: Principal,
  input: z.output<typeof createUser>,
  audit: AuditUserChange,
): Promise<UserRow> {
  requirePermission(principal, 'users:manage');
  const partnerId = principal.scope === 'platform' ? input.partnerId : principal.partnerId;
  if (!partnerId) throw invalid('body.partnerId', 'A platform administrator names the partner: give partnerId');
  if (principal.scope !== 'platform' && input.partnerId && input.partnerId !== partnerId) throw NotFound('Partner');
  const orgId = input.orgId ?? null;
  await checkPlacement(db, principal, partnerId, input.role, orgId);
  return db.transaction(async (tx) => {
    const partner = await tx.query('SELECT 1 FROM partners WHERE id = :partnerId::uuid', { partnerId });
    if (partner.rows.length === 0) throw NotFound('Partner');
    const created = await store.insertUser(tx, {
      partnerId,
      orgId,
      email: input.email,
      name: input.name ?? null,
      role: input.role,
      createdBy: principal.id,
    });
    if (!created) throw Conflict(`A user with the e-mail address ${input.email} exists`);
    await audit(tx, created, { action: 'user.create', details: { after: userOf(created) } });
    await inviteLogin(created);
    return created;
  });
}

export function listUserRecords(db: Db, principal: Principal, query: Page & { orgId?: string; email?: string }) {
  requirePermission(principal, 'users:manage');
  return store.selectUsers(db, principal, query, query);
}

/** Changes the role (and with it the organization); a change to what the user already has writes nothing. */
export async function changeUserRecord(
  db: Db,
  principal: Principal,
  id: string,
  input: z.output<typeof changeUser>,
  audit: AuditUserChange,
): Promise<UserRow> {
  requirePermission(principal, 'users:manage');
  return db.transaction(async (tx) => {
    const before = assertReachable(await store.selectUser(tx, principal, id, true), 'User');
    const role = input.role ?? before.role;
    const orgId = input.orgId !== undefined ? input.orgId : isOrganizationRole(role) ? before.orgId : null;
    if (role === before.role && orgId === before.orgId) return before;
    await checkPlacement(tx, principal, before.partnerId, role, orgId);
    const after = (await store.updateUser(tx, id, { role, orgId, name: before.name }))!;
    await audit(tx, after, {
      action: 'user.permission.change',
      details: { before: { role: before.role, orgId: before.orgId }, after: { role, orgId } },
    });
    return after;
  });
}

export async function deleteUserRecord(db: Db, principal: Principal, id: string, audit: AuditUserChange) {
  requirePermission(principal, 'users:manage');
  await db.transaction(async (tx) => {
    const user = assertReachable(await store.selectUser(tx, principal, id, true), 'User');
    const deleted = await store.softDeleteUser(tx, user.id);
    if (!deleted) return;
    await audit(tx, deleted, { action: 'user.delete', details: { before: userOf(user) } });
    await removeLogin(user.email);
  });
}
