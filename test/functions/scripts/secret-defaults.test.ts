import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { TestConnection } from '#test/support/live-agents.ts';
import { scriptBody } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, orgUser, partnerUser, platformAdmin, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const secretDefault = 'hunter2-secret-default';
const changedDefault = 'swordfish-changed-default';
let tenant: Tenant;
let secondOrgId: string;
let scriptId: string;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Wayne');
  const second = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: 'Wayne Second Corp' },
  });
  secondOrgId = second.body.id;
  const created = await t.api.request('POST', '/api/v1/scripts', {
    token: tenant.partnerToken,
    body: {
      ...scriptBody({
        parameters: [
          { name: 'days', type: 'number', default: 7 },
          { name: 'password', type: 'string', secret: true, default: secretDefault },
          { name: 'pin', type: 'number', secret: true, default: 4711 },
          { name: 'token', type: 'string', secret: true },
        ],
      }),
      availability: 'partner',
    },
  });
  expect(created.status).toBe(201);
  scriptId = created.body.id;
});

/** Everything a user can read about the script: the script, its versions, the library list and the export. */
async function everythingReadable(token: string) {
  const replies = await Promise.all([
    t.api.request('GET', `/api/v1/scripts/${scriptId}`, { token }),
    t.api.request('GET', `/api/v1/scripts/${scriptId}/versions`, { token }),
    t.api.request('GET', '/api/v1/scripts?availability=partner', { token }),
    t.api.request('GET', `/api/v1/scripts/bundle/export?ids=${scriptId}`, { token }),
  ]);
  for (const reply of replies) expect(reply.status).toBe(200);
  return replies;
}

const publicParameters = [
  { name: 'days', type: 'number', required: false, secret: false, default: 7 },
  { name: 'password', type: 'string', required: false, secret: true, hasDefault: true },
  { name: 'pin', type: 'number', required: false, secret: true, hasDefault: true },
  { name: 'token', type: 'string', required: false, secret: true, hasDefault: false },
];

describe('secret parameter defaults', () => {
  it('are never returned, to any role: the replies say hasDefault', async () => {
    const tokens = {
      platform_admin: await platformAdmin(),
      partner_admin: tenant.partnerToken,
      partner_technician: await partnerUser(tenant.partnerId, 'partner_technician'),
      org_admin: await orgUser(tenant.partnerId, tenant.orgId, 'org_admin'),
      org_technician: await orgUser(tenant.partnerId, tenant.orgId, 'org_technician'),
      org_viewer: await orgUser(tenant.partnerId, tenant.orgId, 'org_viewer'),
      'org_viewer of another organization': await orgUser(tenant.partnerId, secondOrgId, 'org_viewer'),
    };
    for (const [role, token] of Object.entries(tokens)) {
      const [script, versions, list, bundle] = await everythingReadable(token);
      const text = JSON.stringify([script!.body, versions!.body, list!.body, bundle!.body]);
      expect(text, role).not.toContain(secretDefault);
      expect(text, role).not.toContain('4711');
      expect(text, role).not.toContain('sealedDefault');
      expect(script!.body.parameters, role).toEqual(publicParameters);
      expect(versions!.body.data[0].parameters, role).toEqual(publicParameters);
      expect(list!.body.data.find((s: { id: string }) => s.id === scriptId).parameters, role).toEqual(publicParameters);
      expect(bundle!.body.scripts[0].parameters, role).toEqual(publicParameters);
    }
  });

  it('are stored sealed, and kept out of the trail', async () => {
    const stored = await t.db.admin.query<{ parameters: unknown }>(
      `SELECT parameters FROM scripts WHERE id = :id::uuid
       UNION ALL SELECT parameters FROM script_versions WHERE script_id = :id::uuid`,
      { id: scriptId },
    );
    expect(stored.rows).toHaveLength(2);
    for (const row of stored.rows) {
      const text = JSON.stringify(row.parameters);
      expect(text).not.toContain(secretDefault);
      expect(text).not.toContain('4711');
      const password = (row.parameters as { name: string; sealedDefault?: string; default?: unknown }[])[1]!;
      expect(password.sealedDefault).toMatch(/^v1\./);
      expect(password).not.toHaveProperty('default');
    }
    const audit = await t.db.admin.query<{ action: string; details: unknown }>(
      `SELECT action, details FROM audit_logs WHERE resource_id = :id::uuid`,
      { id: scriptId },
    );
    expect(audit.rows.map((row) => row.action)).toContain('script.create');
    const trail = JSON.stringify(audit.rows);
    expect(trail).not.toContain(secretDefault);
    expect(trail).not.toContain('4711');
    expect(trail).not.toContain('v1.');
    expect(trail).toContain('"hasDefault":true');
  });

  it('are used by a run that gives no value, and kept when the definition read is sent back', async () => {
    const device = await enrollDevice(t.api, tenant, 'secret-host');
    const agent = await TestConnection.open(t.api, device.token);
    const run = await t.api.request('POST', `/api/v1/scripts/${scriptId}/runs`, {
      token: tenant.orgToken,
      body: { deviceIds: [device.deviceId] },
    });
    expect(run.status).toBe(202);
    expect(JSON.stringify(run.body)).not.toContain(secretDefault);
    expect((await agent.next()).parameters).toEqual({ days: 7, password: secretDefault, pin: 4711 });

    // The definition as read, sent back: the secret defaults stay, and nothing makes a new version.
    const read = await t.api.request('GET', `/api/v1/scripts/${scriptId}`, { token: tenant.partnerToken });
    const sentBack = await t.api.request('PATCH', `/api/v1/scripts/${scriptId}`, {
      token: tenant.partnerToken,
      body: { parameters: read.body.parameters },
    });
    expect(sentBack.status).toBe(200);
    expect(sentBack.body).toMatchObject({ version: 1, parameters: publicParameters });

    // A new default replaces the old one (a new version); the reply shows neither.
    const changed = await t.api.request('PATCH', `/api/v1/scripts/${scriptId}`, {
      token: tenant.partnerToken,
      body: {
        parameters: [
          { name: 'days', type: 'number', default: 7 },
          { name: 'password', type: 'string', secret: true, default: changedDefault },
          { name: 'pin', type: 'number', secret: true, hasDefault: true },
        ],
      },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.version).toBe(2);
    expect(JSON.stringify(changed.body)).not.toContain(changedDefault);
    const audit = await t.db.admin.query(`SELECT details FROM audit_logs WHERE resource_id = :id::uuid`, {
      id: scriptId,
    });
    expect(JSON.stringify(audit.rows)).not.toContain(changedDefault);
    await t.api.request('POST', `/api/v1/scripts/${scriptId}/runs`, {
      token: tenant.orgToken,
      body: { deviceIds: [device.deviceId], parameters: { pin: 1234 } },
    });
    expect((await agent.next()).parameters).toEqual({ days: 7, password: changedDefault, pin: 1234 });
    await agent.close();
  });

  it('stored in the clear before they were sealed are sealed on their first read by a run', async () => {
    const created = await t.api.request('POST', '/api/v1/scripts', {
      token: tenant.orgToken,
      body: { ...scriptBody({ parameters: [{ name: 'apiKey', type: 'string', secret: true }] }), orgId: tenant.orgId },
    });
    const clear = [{ name: 'apiKey', type: 'string', required: false, secret: true, default: 'legacy-clear-default' }];
    await t.db.admin.query(`UPDATE scripts SET parameters = :clear::jsonb WHERE id = :id::uuid`, {
      id: created.body.id,
      clear,
    });
    await t.db.admin.query(`UPDATE script_versions SET parameters = :clear::jsonb WHERE script_id = :id::uuid`, {
      id: created.body.id,
      clear,
    });
    const read = await t.api.request('GET', `/api/v1/scripts/${created.body.id}`, { token: tenant.orgToken });
    expect(read.body.parameters).toEqual([
      { name: 'apiKey', type: 'string', required: false, secret: true, hasDefault: true },
    ]);
    const device = await enrollDevice(t.api, tenant, 'legacy-host');
    const agent = await TestConnection.open(t.api, device.token);
    await t.api.request('POST', `/api/v1/scripts/${created.body.id}/runs`, {
      token: tenant.orgToken,
      body: { deviceIds: [device.deviceId] },
    });
    expect((await agent.next()).parameters).toEqual({ apiKey: 'legacy-clear-default' });
    await agent.close();
    const stored = await t.db.admin.query<{ parameters: unknown }>(
      `SELECT parameters FROM scripts WHERE id = :id::uuid
       UNION ALL SELECT parameters FROM script_versions WHERE script_id = :id::uuid`,
      { id: created.body.id },
    );
    for (const row of stored.rows) {
      expect(JSON.stringify(row.parameters)).not.toContain('legacy-clear-default');
      expect(JSON.stringify(row.parameters)).toContain('"sealedDefault":"v1.');
    }
  });
});
