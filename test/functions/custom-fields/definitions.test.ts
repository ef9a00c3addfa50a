import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
let acmeSecondOrg: { orgId: string; orgToken: string };

async function auditRows(action: string, resourceId: string) {
  const { rows } = await t.db.admin.query<{ orgId: string; details: Record<string, unknown> }>(
    `SELECT org_id AS "orgId", details FROM audit_logs WHERE action = :action::text AND resource_id = :resourceId::uuid
      ORDER BY seq`,
    { action, resourceId },
  );
  return rows;
}

const create = (token: string, body: Record<string, unknown>) =>
  t.api.request('POST', '/api/v1/custom-fields', { token, body });

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  const org = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: acme.partnerToken,
    body: { name: 'Acme Second' },
  });
  acmeSecondOrg = { orgId: org.body.id, orgToken: await orgUser(acme.partnerId, org.body.id) };
});

describe('custom field definitions', () => {
  it('are created partner-wide by partner users and per organization by its users, and seen by whom they concern', async () => {
    const wide = await create(acme.partnerToken, {
      name: 'Asset tag',
      key: 'asset_tag',
      type: 'text',
      description: 'The sticker on the case',
    });
    expect(wide.status).toBe(201);
    expect(wide.body).toMatchObject({
      partnerId: acme.partnerId,
      orgId: null,
      scope: 'device',
      key: 'asset_tag',
      type: 'text',
      required: false,
      scriptWritable: false,
      choices: null,
    });
    const own = await create(acme.orgToken, {
      orgId: acme.orgId,
      name: 'Rack',
      key: 'rack',
      type: 'dropdown',
      choices: ['A1', 'A2'],
    });
    expect(own.status).toBe(201);
    expect(own.body).toMatchObject({ orgId: acme.orgId, choices: ['A1', 'A2'] });

    const seenBy = async (token: string, query = '') =>
      (await t.api.request('GET', `/api/v1/custom-fields${query}`, { token })).body.data.map(
        (field: { key: string }) => field.key,
      );
    expect(await seenBy(acme.orgToken)).toEqual(['asset_tag', 'rack']);
    expect(await seenBy(acmeSecondOrg.orgToken)).toEqual(['asset_tag']);
    expect(await seenBy(acme.partnerToken, `?orgId=${acmeSecondOrg.orgId}`)).toEqual(['asset_tag']);
    expect(await seenBy(globex.orgToken)).toEqual([]);
    expect(
      (await t.api.request('GET', `/api/v1/custom-fields/${own.body.id}`, { token: globex.partnerToken })).status,
    ).toBe(404);
    expect(
      (await t.api.request('GET', `/api/v1/custom-fields/${own.body.id}`, { token: acmeSecondOrg.orgToken })).status,
    ).toBe(404);
    expect(
      (await t.api.request('GET', `/api/v1/custom-fields/${wide.body.id}`, { token: acme.orgToken })).body,
    ).toEqual(wide.body);

    // The partner-wide definition's audit row reaches every organization of the partner.
    const rows = await auditRows('custom_field.create', wide.body.id);
    expect(rows.map((row) => row.orgId).sort()).toEqual([acme.orgId, acmeSecondOrg.orgId].sort());
    expect(rows[0]!.details).toMatchObject({ partnerWide: true, after: { key: 'asset_tag', type: 'text' } });
  });

  it("refuse organization users creating or changing partner-wide fields, and another tenant's organization", async () => {
    expect((await create(acme.orgToken, { name: 'X', key: 'x_wide', type: 'text' })).status).toBe(403);
    expect((await create(acme.orgToken, { orgId: globex.orgId, name: 'X', key: 'x_other', type: 'text' })).status).toBe(
      404,
    );
    const wide = await create(acme.partnerToken, { name: 'Warranty', key: 'warranty_end', type: 'date' });
    const patch = await t.api.request('PATCH', `/api/v1/custom-fields/${wide.body.id}`, {
      token: acme.orgToken,
      body: { name: 'Warranty end' },
    });
    expect(patch.status).toBe(403);
    const { rows } = await t.db.admin.query(`SELECT 1 FROM custom_field_definitions WHERE key LIKE 'x_%'`);
    expect(rows).toEqual([]);
  });

  it('keep one meaning per key for a device: a collision is 409 naming the other definition', async () => {
    const wide = await create(acme.partnerToken, { name: 'Owner', key: 'owner', type: 'text' });
    const clash = await create(acme.orgToken, { orgId: acme.orgId, name: 'Owner name', key: 'owner', type: 'text' });
    expect(clash.status).toBe(409);
    expect(clash.body.error.message).toContain(wide.body.id);
    expect(clash.body.error.message).toContain('"Owner"');

    const own = await create(acme.orgToken, {
      orgId: acme.orgId,
      name: 'Cost centre',
      key: 'cost_centre',
      type: 'text',
    });
    const wideClash = await create(acme.partnerToken, { name: 'Cost centre', key: 'cost_centre', type: 'text' });
    expect(wideClash.status).toBe(409);
    expect(wideClash.body.error.message).toContain(own.body.id);
    // Another organization of the partner, or another partner, may use the key for its own field.
    expect(
      (
        await create(acmeSecondOrg.orgToken, {
          orgId: acmeSecondOrg.orgId,
          name: 'CC',
          key: 'cost_centre',
          type: 'text',
        })
      ).status,
    ).toBe(201);
    expect((await create(globex.partnerToken, { name: 'Owner', key: 'owner', type: 'text' })).status).toBe(201);
  });

  it('refuse inconsistent definitions with a 400 naming the field', async () => {
    for (const [body, path] of [
      [{ name: 'X', key: 'Bad-Key', type: 'text' }, 'body.key'],
      [{ name: 'X', key: 'x1', type: 'colour' }, 'body.type'],
      [{ name: 'X', key: 'x2', type: 'dropdown' }, 'body.choices'],
      [{ name: 'X', key: 'x3', type: 'text', choices: ['a'] }, 'body.choices'],
      [{ name: 'X', key: 'x4', type: 'number', min: 5, max: 1 }, 'body.max'],
      [{ name: 'X', key: 'x5', type: 'number', defaultValue: '7' }, 'body.defaultValue'],
      [{ name: 'X', key: 'x6', type: 'text', sourceSystem: 'datto' }, 'body.externalId'],
      [{ name: '', key: 'x7', type: 'text' }, 'body.name'],
    ] as const) {
      const reply = await create(acme.partnerToken, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it('change their type only while they hold no values, and need force to be deleted with values', async () => {
    const field = await create(acme.partnerToken, { name: 'Seats', key: 'seats', type: 'number', min: 0 });
    const device = await enrollDevice(t.api, acme, 'cf-host-1');
    await t.db.admin.query(
      `INSERT INTO device_custom_field_values (device_id, field_id, value) VALUES (:deviceId::uuid, :fieldId::uuid, '3')`,
      { deviceId: device.deviceId, fieldId: field.body.id },
    );
    const retype = await t.api.request('PATCH', `/api/v1/custom-fields/${field.body.id}`, {
      token: acme.partnerToken,
      body: { type: 'text' },
    });
    expect(retype.status).toBe(409);
    const renamed = await t.api.request('PATCH', `/api/v1/custom-fields/${field.body.id}`, {
      token: acme.partnerToken,
      body: { name: 'Licensed seats', max: 100 },
    });
    expect(renamed.body).toMatchObject({ name: 'Licensed seats', type: 'number', min: 0, max: 100 });
    const [update] = (await auditRows('custom_field.update', field.body.id)).filter((row) => row.orgId === acme.orgId);
    expect(update!.details).toMatchObject({
      before: { name: 'Seats', max: null },
      after: { name: 'Licensed seats', max: 100 },
    });

    const path = `/api/v1/custom-fields/${field.body.id}`;
    expect((await t.api.request('DELETE', path, { token: acme.partnerToken })).status).toBe(409);
    expect((await t.api.request('DELETE', `${path}?force=true`, { token: acme.partnerToken })).status).toBe(204);
    expect((await t.api.request('GET', path, { token: acme.partnerToken })).status).toBe(404);
    const { rows } = await t.db.admin.query('SELECT 1 FROM device_custom_field_values WHERE field_id = :id::uuid', {
      id: field.body.id,
    });
    expect(rows).toEqual([]);
    const deleted = await auditRows('custom_field.delete', field.body.id);
    expect(deleted.find((row) => row.orgId === acme.orgId)!.details).toMatchObject({
      valuesRemoved: 1,
      valuesRemovedInAll: 1,
      before: { key: 'seats' },
    });
    expect(deleted.find((row) => row.orgId === acmeSecondOrg.orgId)!.details).toMatchObject({ valuesRemoved: 0 });
  });

  it('deleted twice at once: one delete answers 204 and is audited, the other finds it gone (404)', async () => {
    const field = await create(acme.orgToken, { name: 'Racked', key: 'racked', type: 'text', orgId: acme.orgId });
    expect(field.status).toBe(201);
    const path = `/api/v1/custom-fields/${field.body.id}`;
    const replies = await Promise.all([1, 2].map(() => t.api.request('DELETE', path, { token: acme.orgToken })));
    expect(replies.map((reply) => reply.status).sort()).toEqual([204, 404]);
    expect(await auditRows('custom_field.delete', field.body.id)).toHaveLength(1);
  });
});
