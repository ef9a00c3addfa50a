import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
let secondOrgId: string;

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: acme.partnerToken,
    body: { name: 'Acme Second' },
  });
  secondOrgId = org.body.id;
});

const post = (token: string, body: unknown, headers?: Record<string, string>) =>
  t.api.request('POST', '/api/v1/users', { token, body, headers });

const auditRows = (action: string, resourceId: string) =>
  t.db.admin
    .query<{ orgId: string; details: Record<string, unknown>; actorId: string }>(
      `SELECT org_id AS "orgId", details, actor_id AS "actorId" FROM audit_logs
        WHERE action = :action::text AND resource_id = :resourceId::uuid ORDER BY org_id`,
      { action, resourceId },
    )
    .then((r) => r.rows);

describe('POST /users', () => {
  it("invites an organization user, stored and audited as user.create in that organization's trail", async () => {
    const reply = await post(acme.partnerToken, {
      email: 'Tech.One@Acme.example',
      name: 'Tech One',
      role: 'org_technician',
      orgId: acme.orgId,
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      partnerId: acme.partnerId,
      orgId: acme.orgId,
      email: 'tech.one@acme.example',
      name: 'Tech One',
      role: 'org_technician',
    });
    const rows = await auditRows('user.create', reply.body.id);
    expect(rows).toEqual([
      expect.objectContaining({
        orgId: acme.orgId,
        details: expect.objectContaining({
          after: { email: 'tech.one@acme.example', name: 'Tech One', role: 'org_technician', orgId: acme.orgId },
        }),
      }),
    ]);
  });

  it("audits a partner user's creation in every organization of the partner", async () => {
    const reply = await post(acme.partnerToken, { email: 'lead@acme.example', role: 'partner_technician' });
    expect(reply.status).toBe(201);
    expect(reply.body.orgId).toBeNull();
    const orgs = (await auditRows('user.create', reply.body.id)).map((row) => row.orgId).sort();
    expect(orgs).toEqual([acme.orgId, secondOrgId].sort());
  });

  it('refuses a second live user with the same address, in any case (409), storing nothing', async () => {
    expect((await post(acme.partnerToken, { email: 'twice@acme.example', role: 'partner_admin' })).status).toBe(201);
    const again = await post(globex.partnerToken, { email: 'TWICE@acme.example', role: 'partner_admin' });
    expect(again.status).toBe(409);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM users WHERE lower(email) = 'twice@acme.example'`);
    expect(rows).toHaveLength(1);
  });

  it.each([
    [{ email: 'not-an-address', role: 'org_viewer' }, 'body.email'],
    [{ email: 'a@acme.example', role: 'galaxy_admin' }, 'body.role'],
    [{ email: 'a@acme.example', role: 'org_viewer' }, 'body.orgId'],
    [{ email: 'a@acme.example', role: 'partner_admin', orgId: '00000000-0000-4000-8000-000000000000' }, 'body.orgId'],
    [{ role: 'org_viewer' }, 'body.email'],
  ])('refuses %j with 400 naming %s', async (body, path) => {
    const reply = await post(acme.partnerToken, body);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it("answers 404 for another partner's organization, never naming it", async () => {
    const reply = await post(acme.partnerToken, { email: 'x@acme.example', role: 'org_viewer', orgId: globex.orgId });
    expect(reply.status).toBe(404);
    expect(JSON.stringify(reply.body)).not.toContain(globex.orgId);
  });

  it('lets an organization administrator invite only into its organization, and no technician at all', async () => {
    const orgAdmin = await orgUser(acme.partnerId, acme.orgId, 'org_admin');
    expect((await post(orgAdmin, { email: 'v1@acme.example', role: 'org_viewer', orgId: acme.orgId })).status).toBe(
      201,
    );
    expect((await post(orgAdmin, { email: 'v2@acme.example', role: 'org_viewer', orgId: secondOrgId })).status).toBe(
      404,
    );
    expect((await post(orgAdmin, { email: 'v3@acme.example', role: 'partner_admin' })).status).toBe(403);
    const technician = await partnerUser(acme.partnerId, 'partner_technician');
    expect((await post(technician, { email: 'v4@acme.example', role: 'partner_admin' })).status).toBe(403);
  });

  it('has a platform administrator name the partner', async () => {
    const root = await platformAdmin();
    const without = await post(root, { email: 'p1@globex.example', role: 'partner_admin' });
    expect(without.status).toBe(400);
    expect(without.body.error.details[0].path).toBe('body.partnerId');
    const reply = await post(root, { email: 'p1@globex.example', role: 'partner_admin', partnerId: globex.partnerId });
    expect(reply.status).toBe(201);
    expect(reply.body.partnerId).toBe(globex.partnerId);
  });

  it('creates once for one Idempotency-Key', async () => {
    const body = { email: 'once@acme.example', role: 'org_viewer', orgId: acme.orgId };
    const headers = { 'idempotency-key': 'invite-once-1' };
    const first = await post(acme.partnerToken, body, headers);
    const second = await post(acme.partnerToken, body, headers);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
    expect(await auditRows('user.create', first.body.id)).toHaveLength(1);
  });
});

describe('GET, PATCH and DELETE /users', () => {
  it("lists only the caller's tenant, an organization administrator only its organization", async () => {
    const created = await post(globex.partnerToken, {
      email: 'only@globex.example',
      role: 'org_admin',
      orgId: globex.orgId,
    });
    const acmeList = await t.api.request('GET', '/api/v1/users?limit=500', { token: acme.partnerToken });
    expect(acmeList.status).toBe(200);
    expect(acmeList.body.data.every((user: { partnerId: string }) => user.partnerId === acme.partnerId)).toBe(true);
    const byEmail = await t.api.request('GET', '/api/v1/users?email=ONLY@globex.example', {
      token: globex.partnerToken,
    });
    expect(byEmail.body.data.map((user: { id: string }) => user.id)).toEqual([created.body.id]);
    const orgAdmin = await orgUser(acme.partnerId, acme.orgId, 'org_admin');
    const orgList = await t.api.request('GET', '/api/v1/users?limit=500', { token: orgAdmin });
    expect(orgList.body.data.length).toBeGreaterThan(0);
    expect(orgList.body.data.every((user: { orgId: string }) => user.orgId === acme.orgId)).toBe(true);
  });

  it('changes the role and organization, audited as user.permission.change with before and after', async () => {
    const created = await post(acme.partnerToken, {
      email: 'mover@acme.example',
      role: 'org_viewer',
      orgId: acme.orgId,
    });
    const id = created.body.id;
    const patch = (body: unknown, token = acme.partnerToken) =>
      t.api.request('PATCH', `/api/v1/users/${id}`, { token, body });
    const moved = await patch({ role: 'org_admin', orgId: secondOrgId });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ role: 'org_admin', orgId: secondOrgId });
    expect(await auditRows('user.permission.change', id)).toEqual([
      expect.objectContaining({
        orgId: secondOrgId,
        details: expect.objectContaining({
          before: { role: 'org_viewer', orgId: acme.orgId },
          after: { role: 'org_admin', orgId: secondOrgId },
        }),
      }),
    ]);
    // The same again changes nothing and writes nothing.
    expect((await patch({ role: 'org_admin' })).status).toBe(200);
    expect(await auditRows('user.permission.change', id)).toHaveLength(1);
    expect((await patch({ role: 'partner_technician' })).status).toBe(200);
    const promoted = await t.db.admin.query('SELECT role, org_id AS "orgId" FROM users WHERE id = :id::uuid', { id });
    expect(promoted.rows).toEqual([{ role: 'partner_technician', orgId: null }]);
    const back = await patch({ role: 'org_viewer' });
    expect(back.status).toBe(400);
    expect(back.body.error.details[0].path).toBe('body.orgId');
    expect((await patch({})).status).toBe(400);
    expect((await patch({ role: 'org_viewer', orgId: acme.orgId }, globex.partnerToken)).status).toBe(404);
  });

  it('deletes a user (204), audited as user.delete; the address may be invited again', async () => {
    const created = await post(acme.partnerToken, {
      email: 'leaver@acme.example',
      role: 'org_viewer',
      orgId: acme.orgId,
    });
    const id = created.body.id;
    expect((await t.api.request('DELETE', `/api/v1/users/${id}`, { token: globex.partnerToken })).status).toBe(404);
    expect((await t.api.request('DELETE', `/api/v1/users/${id}`, { token: acme.partnerToken })).status).toBe(204);
    expect((await t.api.request('DELETE', `/api/v1/users/${id}`, { token: acme.partnerToken })).status).toBe(404);
    expect(await auditRows('user.delete', id)).toHaveLength(1);
    expect(
      (await post(acme.partnerToken, { email: 'leaver@acme.example', role: 'org_viewer', orgId: acme.orgId })).status,
    ).toBe(201);
  });
});
