import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { type AuditListQuery, listAuditEntries } from '#shared/audit/query.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';
import { insertOrganization, insertPartner } from '#shared/hierarchy/store.ts';
import { appendAudit, deleteChainRows, tamper, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();
/** More device.update rows than the 1,000 a filtered count once stopped at, then a few logins. */
const updates = 1_050;
const logins = 3;
let orgId: string;
let otherOrgId: string;
let partner: Principal;

const orgAdmin = (id: string, partnerId: string): Principal => ({
  actorType: 'user',
  id: randomUUID(),
  email: 'admin@totals.test',
  name: 'Admin',
  role: 'org_admin',
  scope: 'organization',
  partnerId,
  orgId: id,
  permissions: scopedPermissions('organization', rolePermissions.org_admin),
});

const page = (principal: Principal, query: Partial<AuditListQuery>) =>
  listAuditEntries(t.app, principal, { page: 1, limit: 50, skipCount: false, ...query }).then(
    (result) => result.pagination,
  );

beforeAll(async () => {
  const msp = (await insertPartner(t.db.admin, 'Totals MSP')) as { id: string };
  orgId = (await insertOrganization(t.db.admin, { partnerId: msp.id, name: 'Busy Corp' })).id;
  otherOrgId = (await insertOrganization(t.db.admin, { partnerId: msp.id, name: 'Quiet Corp' })).id;
  partner = {
    ...orgAdmin(orgId, msp.id),
    role: 'partner_admin',
    scope: 'partner',
    orgId: null,
    permissions: scopedPermissions('partner', rolePermissions.partner_admin),
  } as Principal;
  // Through the sealing trigger in one statement: a chain of 1,050 updates.
  await t.db.admin.query(
    `INSERT INTO audit_entries (org_id, actor_type, actor_id, action, resource_type, details)
     SELECT :orgId::uuid, 'user', gen_random_uuid(), 'device.update', 'device', jsonb_build_object('n', i) FROM generate_series(1, :n::int) i`,
    { orgId, n: updates },
  );
  await appendAudit(
    t.app,
    Array.from({ length: logins }, () => ({ orgId, action: 'user.login' })),
  );
  await appendAudit(t.app, [{ orgId: otherOrgId, action: 'user.login' }]);
});

describe('list totals at scale', () => {
  it('counts a whole trail exactly, past the filtered limit, and a partner sums the trails of its organizations', async () => {
    expect(await page(orgAdmin(orgId, partner.partnerId!), {})).toEqual({
      page: 1,
      limit: 50,
      total: updates + logins,
      totalPages: 22,
      hasMore: true,
      totalExact: true,
    });
    expect(await page(partner, {})).toMatchObject({ total: updates + logins + 1, totalExact: true });
    expect(await page(partner, { orgId: otherOrgId })).toMatchObject({ total: 1, totalExact: true, hasMore: false });
  });

  it('counts a filtered set exactly, past 1,000 rows, on every page', async () => {
    const admin = orgAdmin(orgId, partner.partnerId!);
    expect(await page(admin, { action: 'device.update' })).toEqual({
      page: 1,
      limit: 50,
      total: updates,
      totalPages: 21,
      hasMore: true,
      totalExact: true,
    });
    expect(await page(admin, { action: 'device.update', page: 21 })).toEqual({
      page: 21,
      limit: 50,
      total: updates,
      totalPages: 21,
      hasMore: false,
      totalExact: true,
    });
    expect(await page(admin, { action: 'user.login' })).toEqual({
      page: 1,
      limit: 50,
      total: logins,
      totalPages: 1,
      hasMore: false,
      totalExact: true,
    });
  });

  it('counts only the retained rows after a retention cut', async () => {
    await t.auditAdmin.transaction(async (tx) => {
      await tx.query(`SET LOCAL logbook.audit_retention = 'on'`);
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq <= 100', { orgId });
    });
    const admin = orgAdmin(orgId, partner.partnerId!);
    const after = await page(admin, {});
    expect(after).toMatchObject({ total: updates + logins - 100, totalExact: true });
    // The first 100 rows were updates: a filter on the action counts what is left of them.
    expect(await page(admin, { action: 'DEVICE.UPD' })).toMatchObject({ total: updates - 100, totalExact: true });
    expect(await page(admin, { action: 'login' })).toMatchObject({ total: logins, totalExact: true });
    const { rows } = await t.app.query<{ n: number }>(
      'SELECT count(*) AS n FROM audit_logs WHERE org_id = :orgId::uuid',
      { orgId },
    );
    expect(rows[0]!.n).toBe(after.total);
  });

  it('counts a filter on the action alone and the same filter with a search alike', async () => {
    const admin = orgAdmin(orgId, partner.partnerId!);
    const byAction = await page(admin, { action: 'user.' });
    expect(byAction).toMatchObject({ total: logins, totalExact: true });
    expect(await page(admin, { action: 'user.', q: 'login' })).toMatchObject({ total: logins, totalExact: true });
    expect(await page(partner, { action: 'user.login' })).toMatchObject({ total: logins + 1, totalExact: true });
    expect(await page(admin, { action: 'nothing.like.this' })).toMatchObject({ total: 0, totalExact: true });
  });

  it('counts a search as the rows it matches, by their action or elsewhere, each once', async () => {
    const admin = orgAdmin(orgId, partner.partnerId!);
    for (const [q, action] of [['device'], ['login'], ['upd'], ['"n": 1'], ['7'], ['device', 'login'], ['e', 'upd']]) {
      const { rows } = await t.app.query<{ n: number }>(
        `SELECT count(*) AS n FROM audit_logs WHERE org_id = :orgId::uuid AND action ILIKE :action
            AND (action ILIKE :q OR actor_email ILIKE :q OR resource_type ILIKE :q OR resource_name ILIKE :q OR details::text ILIKE :q)`,
        { orgId, q: `%${q}%`, action: `%${action ?? ''}%` },
      );
      expect(rows[0]!.n, q).toBeGreaterThan(0);
      expect(await page(admin, { q, action }), `${q} ${action}`).toMatchObject({ total: rows[0]!.n, totalExact: true });
    }
  });

  it('counts the positions the chain holds: a row deleted behind its back still counts, and verification reports it', async () => {
    const before = (await page(partner, { orgId: otherOrgId })).total;
    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId: otherOrgId }));
    expect(await page(partner, { orgId: otherOrgId })).toMatchObject({ total: before, hasMore: false });
    expect(await verifyChain(t.app, otherOrgId)).toMatchObject({ ok: false, firstBreak: { seq: 1, kind: 'missing' } });
  });
});
