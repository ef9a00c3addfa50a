import { beforeAll, describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { useApi } from '#test/support/api.ts';
import { auditRowsOf, scriptBody } from '#test/support/scripts.ts';
import { createTenant, orgUser, partnerUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
});

const auditRows = (action: string, resourceId: string) => auditRowsOf(t.db.admin, action, resourceId);

describe('script library', () => {
  it('creates an organization script at version 1 with defaults, audited as script.create', async () => {
    const reply = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: 'Disk check' }), orgId: tenant.orgId },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({
      orgId: tenant.orgId,
      partnerId: tenant.partnerId,
      availability: 'organization',
      version: 1,
      timeoutSeconds: 300,
      runAs: 'system',
      exitCodeSeverityMapping: null,
      parameters: [{ name: 'days', type: 'number', required: true, secret: false }],
    });
    const rows = await auditRows('script.create', reply.body.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.orgId).toBe(tenant.orgId);
  });

  it('refuses bad definitions with a 400 naming the field, storing nothing', async () => {
    for (const [body, path] of [
      [scriptBody({ language: 'perl' }), 'language'],
      [scriptBody({ content: 'x'.repeat(256 * 1024 + 1) }), 'content'],
      [scriptBody({ parameters: [{ name: 'level', type: 'select' }] }), 'parameters'],
      [scriptBody({ parameters: [{ name: 'n', type: 'number', default: 'ten' }] }), 'parameters'],
      [scriptBody({ exitCodeSeverityMapping: { one: 'high' } }), 'exitCodeSeverityMapping'],
      [scriptBody({ timeoutSeconds: 3601 }), 'timeoutSeconds'],
      [scriptBody(), 'orgId'],
    ] as const) {
      const reply = await t.api.request('POST', '/api/v1/scripts', {
        token: tenant.orgToken,
        body: path === 'orgId' ? body : { ...body, orgId: tenant.orgId },
      });
      expect(reply.status, path).toBe(400);
      expect(JSON.stringify(reply.body.error.details), path).toContain(path);
    }
  });

  it('a second live script of the same name in one library is 409 NAME_CONFLICT', async () => {
    const body = { ...scriptBody({ name: 'Same name' }), orgId: tenant.orgId };
    expect((await t.api.request('POST', '/api/v1/scripts', { token: tenant.orgToken, body })).status).toBe(201);
    const again = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...body, name: 'SAME NAME' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('NAME_CONFLICT');
  });

  it('makes a new version when content or parameters change, not when only the name does', async () => {
    const created = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody(), orgId: tenant.orgId },
    });
    const id = created.body.id;
    const renamed = await t.api.request('PATCH', `/api/v1/scripts/${id}`, {
      token: tenant.orgToken,
      body: { name: 'Renamed script' },
    });
    expect(renamed.body.version).toBe(1);
    const changed = await t.api.request('PATCH', `/api/v1/scripts/${id}`, {
      token: tenant.orgToken,
      body: { content: 'Write-Output 2' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ version: 2, content: 'Write-Output 2', name: 'Renamed script' });
    routes['PATCH /api/v1/scripts/{scriptId}'].response.parse(changed.body);
    const versions = await t.api.request('GET', `/api/v1/scripts/${id}/versions`, { token: tenant.orgToken });
    routes['GET /api/v1/scripts/{scriptId}/versions'].response.parse(versions.body);
    routes['GET /api/v1/scripts'].response.parse(
      (await t.api.request('GET', '/api/v1/scripts', { token: tenant.orgToken })).body,
    );
    expect(versions.body.data.map((v: { version: number; content: string }) => [v.version, v.content])).toEqual([
      [2, 'Write-Output 2'],
      [1, 'Remove-Item $env:TEMP\\* -Recurse'],
    ]);
    const [update] = (await auditRows('script.update', id)).filter((r) => r.details.version === 2);
    expect(update!.details).toMatchObject({ before: { contentBytes: 32 }, after: { contentBytes: 14 } });
  });

  it('serves a partner script to every organization, those created later included, but lets only partner users edit it', async () => {
    const created = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.partnerToken,
      body: { ...scriptBody({ name: 'Partner baseline' }), availability: 'partner' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ availability: 'partner', orgId: null });
    const later = await t.api.request('POST', '/api/v1/orgs/organizations', {
      token: tenant.partnerToken,
      body: { name: 'Later Corp' },
    });
    const laterUser = await orgUser(tenant.partnerId, later.body.id);
    const seen = await t.api.request('GET', `/api/v1/scripts?orgId=${later.body.id}&availability=partner`, {
      token: laterUser,
    });
    expect(seen.body.data.map((s: { id: string }) => s.id)).toContain(created.body.id);
    const edit = await t.api.request('PATCH', `/api/v1/scripts/${created.body.id}`, {
      token: laterUser,
      body: { description: 'mine now' },
    });
    expect(edit.status).toBe(403);
    const orgCreate = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody(), availability: 'partner' },
    });
    expect(orgCreate.status).toBe(403);
    const technician = await partnerUser(tenant.partnerId, 'partner_technician');
    const byPartner = await t.api.request('PATCH', `/api/v1/scripts/${created.body.id}`, {
      token: technician,
      body: { description: 'tuned' },
    });
    expect(byPartner.status).toBe(200);
  });

  it("hides another tenant's scripts (404) and deletes softly", async () => {
    const created = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody(), orgId: tenant.orgId },
    });
    const id = created.body.id;
    expect((await t.api.request('GET', `/api/v1/scripts/${id}`, { token: other.orgToken })).status).toBe(404);
    expect((await t.api.request('DELETE', `/api/v1/scripts/${id}`, { token: other.partnerToken })).status).toBe(404);
    const list = await t.api.request('GET', '/api/v1/scripts', { token: other.partnerToken });
    expect(list.body.data.map((s: { id: string }) => s.id)).not.toContain(id);
    expect((await t.api.request('DELETE', `/api/v1/scripts/${id}`, { token: tenant.orgToken })).status).toBe(204);
    expect((await t.api.request('GET', `/api/v1/scripts/${id}`, { token: tenant.orgToken })).status).toBe(404);
    const stored = await t.db.admin.query('SELECT deleted_at FROM scripts WHERE id = :id::uuid', { id });
    expect(stored.rows[0]!.deleted_at).not.toBeNull();
    expect(await auditRows('script.delete', id)).toHaveLength(1);
  });

  it('org viewers read but do not write scripts', async () => {
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    expect((await t.api.request('GET', '/api/v1/scripts', { token: viewer })).status).toBe(200);
    const reply = await t.api.request('POST', '/api/v1/scripts', {
      token: viewer,
      body: { ...scriptBody(), orgId: tenant.orgId },
    });
    expect(reply.status).toBe(403);
  });
});
