import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { auditRowsOf, scriptBody } from '#test/support/scripts.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
});

const definition = (name: string, content = 'echo hi') => ({
  name,
  language: 'bash',
  osTypes: ['linux'],
  content,
  parameters: [],
});
const bundleOf = (...scripts: unknown[]) => ({ bundleVersion: 1, scripts });
const importRows = () =>
  t.db.admin
    .query<{ details: Record<string, any> }>(
      `SELECT details FROM audit_logs WHERE action = 'script.import' ORDER BY seq`,
    )
    .then((r) => r.rows);

describe('script bundles', () => {
  it('previews each script as new, name-conflict or invalid with its reasons, storing nothing', async () => {
    await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: 'Existing' }), orgId: tenant.orgId },
    });
    const before = (await t.db.admin.query('SELECT count(*) AS n FROM scripts')).rows[0]!.n;
    const reply = await t.api.request('POST', '/api/v1/scripts/bundle/preview', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        bundle: bundleOf(definition('Fresh'), definition('existing'), { ...definition('Bad'), language: 'perl' }),
      },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.scripts).toMatchObject([
      { name: 'Fresh', status: 'new', errors: [] },
      { name: 'existing', status: 'name-conflict', existingScriptId: expect.any(String) },
      { name: 'Bad', status: 'invalid', errors: [{ path: 'bundle.scripts.2.language' }] },
    ]);
    expect(reply.body.summary).toEqual({ total: 3, new: 1, conflicts: 1, invalid: 1 });
    expect((await t.db.admin.query('SELECT count(*) AS n FROM scripts')).rows[0]!.n).toBe(before);
  });

  it('refuses an unknown bundleVersion and more than 200 scripts with a 400', async () => {
    const unknown = await t.api.request('POST', '/api/v1/scripts/bundle/preview', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, bundle: { bundleVersion: 2, scripts: [] } },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0].path).toBe('body.bundle.bundleVersion');
    const many = Array.from({ length: 201 }, (_, i) => definition(`S${i}`));
    const tooMany = await t.api.request('POST', '/api/v1/scripts/bundle/import', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, bundle: bundleOf(...many) },
    });
    expect(tooMany.status).toBe(400);
  });

  it('imports with a mode per conflict, is idempotent, and refuses scripts whose preview changed', async () => {
    await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: 'Keep me', content: 'old' }), orgId: tenant.orgId },
    });
    await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: 'Bump me', content: 'old' }), orgId: tenant.orgId },
    });
    await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ name: 'Twin' }), orgId: tenant.orgId },
    });
    const bundle = bundleOf(
      definition('Brand new'),
      definition('Keep me', 'new'),
      definition('Bump me', 'new'),
      definition('Twin'),
      { name: 'Broken' },
    );
    const body = {
      orgId: tenant.orgId,
      bundle,
      mode: 'skip',
      modes: { 'Bump me': 'new-version', Twin: 'rename' },
    };
    const first = await t.api.request('POST', '/api/v1/scripts/bundle/import', { token: tenant.orgToken, body });
    expect(first.status).toBe(200);
    expect(first.body.scripts.map((s: { result: string }) => s.result)).toEqual([
      'created',
      'skipped',
      'new-version',
      'renamed',
      'invalid',
    ]);
    const bumped = await t.api.request('GET', `/api/v1/scripts/${first.body.scripts[2].scriptId}`, {
      token: tenant.orgToken,
    });
    expect(bumped.body).toMatchObject({ version: 2, content: 'new', language: 'bash' });
    const twin = await t.api.request('GET', `/api/v1/scripts/${first.body.scripts[3].scriptId}`, {
      token: tenant.orgToken,
    });
    expect(twin.body.name).toBe('Twin (2)');
    expect(await auditRowsOf(t.db.admin, 'script.create', first.body.scripts[0].scriptId)).toMatchObject([
      { details: { import: true } },
    ]);

    const again = await t.api.request('POST', '/api/v1/scripts/bundle/import', {
      token: tenant.orgToken,
      body: { ...body, modes: { 'Bump me': 'new-version' } },
    });
    expect(again.body.scripts.map((s: { result: string }) => s.result)).toEqual([
      'skipped',
      'skipped',
      'unchanged',
      'skipped',
      'invalid',
    ]);
    expect((await importRows()).map((r) => r.details.summary)).toEqual([
      { created: 1, skipped: 1, 'new-version': 1, renamed: 1, invalid: 1 },
      { skipped: 3, unchanged: 1, invalid: 1 },
    ]);

    const stale = await t.api.request('POST', '/api/v1/scripts/bundle/import', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, bundle: bundleOf(definition('Brand new')), expected: { 'Brand new': 'new' } },
    });
    expect(stale.body.scripts[0]).toMatchObject({ result: 'changed-since-preview', scriptId: null });
  });

  it('imports into the partner library only for partner users, and exports without tenant identifiers', async () => {
    const partner = await t.api.request('POST', '/api/v1/scripts/bundle/import', {
      token: tenant.orgToken,
      body: { availability: 'partner', bundle: bundleOf(definition('Shared')) },
    });
    expect(partner.status).toBe(403);
    const imported = await t.api.request('POST', '/api/v1/scripts/bundle/import', {
      token: tenant.partnerToken,
      body: { availability: 'partner', bundle: bundleOf(definition('Shared', 'x=1')) },
    });
    const id = imported.body.scripts[0].scriptId;
    const viewer = await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer');
    const exported = await t.api.request('GET', `/api/v1/scripts/bundle/export?ids=${id}`, { token: viewer });
    expect(exported.status).toBe(200);
    expect(exported.body.scripts).toEqual([
      {
        name: 'Shared',
        description: '',
        language: 'bash',
        osTypes: ['linux'],
        content: 'x=1',
        parameters: [],
        timeoutSeconds: 300,
        runAs: 'system',
        exitCodeSeverityMapping: null,
        category: null,
        tags: [],
      },
    ]);
    const text = JSON.stringify(exported.body);
    for (const secret of [id, tenant.orgId, tenant.partnerId]) expect(text).not.toContain(secret);
    const missing = await t.api.request('GET', `/api/v1/scripts/bundle/export?ids=${crypto.randomUUID()}`, {
      token: viewer,
    });
    expect(missing.status).toBe(404);
  });
});
