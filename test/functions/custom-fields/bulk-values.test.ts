import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
let branchOrgId: string;
const ids: Record<string, string> = {};
const fields: Record<string, string> = {};

const bulk = (token: string, fieldId: string, values: { deviceId: string; value: unknown }[]) =>
  t.api.request('PUT', `/api/v1/custom-fields/${fieldId}/values`, { token, body: { values } });

async function stored(fieldId: string) {
  const { rows } = await t.db.admin.query<{ deviceId: string; value: unknown }>(
    `SELECT device_id AS "deviceId", value FROM device_custom_field_values WHERE field_id = :fieldId::uuid
      ORDER BY device_id`,
    { fieldId },
  );
  return Object.fromEntries(rows.map((row) => [row.deviceId, row.value]));
}

async function updates(deviceIds: string[]) {
  const { rows } = await t.db.admin.query<{ resourceId: string; details: Record<string, unknown> }>(
    `SELECT resource_id AS "resourceId", details FROM audit_logs
      WHERE action = 'device.update' AND resource_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:ids::jsonb))
      ORDER BY seq`,
    { ids: JSON.stringify(deviceIds) },
  );
  return rows;
}

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  const branch = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: acme.partnerToken,
    body: { name: 'Acme Branch' },
  });
  branchOrgId = branch.body.id;
  for (const host of ['A-01', 'A-02', 'A-03']) ids[host] = (await enrollDevice(t.api, acme, host)).deviceId;
  ids.branch = (
    await enrollDevice(
      t.api,
      { ...acme, orgId: branchOrgId, orgToken: await orgUser(acme.partnerId, branchOrgId) },
      'B-01',
    )
  ).deviceId;
  ids.globex = (await enrollDevice(t.api, globex, 'G-01')).deviceId;
  for (const [name, body] of Object.entries({
    tag: { name: 'Asset tag', key: 'asset_tag', type: 'text' },
    seats: { name: 'Seats', key: 'seats', type: 'number', min: 1, max: 500 },
    owner: { name: 'Owner', key: 'owner', type: 'text', required: true },
    local: { name: 'Rack', key: 'rack', type: 'text', orgId: acme.orgId },
  })) {
    const created = await t.api.request('POST', '/api/v1/custom-fields', { token: acme.partnerToken, body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    fields[name] = created.body.id;
  }
});

describe('PUT /custom-fields/{fieldId}/values', () => {
  it('sets one field on many devices, audits each changed device with before and after, and writes nothing for unchanged values', async () => {
    const first = await bulk(acme.partnerToken, fields.tag!, [
      { deviceId: ids['A-01']!, value: 'T-1' },
      { deviceId: ids['A-02']!, value: 'T-2' },
      { deviceId: ids.branch!, value: 'T-B' },
    ]);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ key: 'asset_tag', type: 'text', changed: 3, unchanged: 0 });
    expect(await stored(fields.tag!)).toEqual({ [ids['A-01']!]: 'T-1', [ids['A-02']!]: 'T-2', [ids.branch!]: 'T-B' });

    const again = await bulk(acme.partnerToken, fields.tag!, [
      { deviceId: ids['A-01']!, value: 'T-1' },
      { deviceId: ids['A-02']!, value: 'T-2b' },
      { deviceId: ids['A-03']!, value: null },
    ]);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ changed: 1, unchanged: 2 });
    expect(again.body.values).toEqual([
      { deviceId: ids['A-01'], value: 'T-1', changed: false },
      { deviceId: ids['A-02'], value: 'T-2b', changed: true },
      { deviceId: ids['A-03'], value: null, changed: false },
    ]);
    const trail = await updates([ids['A-01']!, ids['A-02']!, ids['A-03']!, ids.branch!]);
    // Two organizations' trails: compared as a set (seq orders one organization's rows only).
    expect(trail).toHaveLength(4);
    expect(trail.map((row) => [row.resourceId, row.details.before, row.details.after])).toEqual(
      expect.arrayContaining([
        [ids['A-01'], { customFields: { asset_tag: null } }, { customFields: { asset_tag: 'T-1' } }],
        [ids['A-02'], { customFields: { asset_tag: null } }, { customFields: { asset_tag: 'T-2' } }],
        [ids.branch, { customFields: { asset_tag: null } }, { customFields: { asset_tag: 'T-B' } }],
        [ids['A-02'], { customFields: { asset_tag: 'T-2' } }, { customFields: { asset_tag: 'T-2b' } }],
      ]),
    );

    const cleared = await bulk(acme.orgToken, fields.tag!, [{ deviceId: ids['A-01']!, value: null }]);
    expect(cleared.body).toMatchObject({ changed: 1, unchanged: 0 });
    expect((await stored(fields.tag!))[ids['A-01']!]).toBeUndefined();
    expect((await updates([ids['A-01']!])).at(-1)!.details).toMatchObject({
      before: { customFields: { asset_tag: 'T-1' } },
      after: { customFields: { asset_tag: null } },
    });
  });

  it('validates every item before writing anything: a 400 naming the item', async () => {
    const before = await stored(fields.seats!);
    const reply = await bulk(acme.partnerToken, fields.seats!, [
      { deviceId: ids['A-01']!, value: 10 },
      { deviceId: ids['A-02']!, value: '12' },
      { deviceId: ids['A-03']!, value: 900 },
    ]);
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toContain('values.1');
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual([
      'body.values.1.value',
      'body.values.2.value',
    ]);
    expect(await stored(fields.seats!)).toEqual(before);

    const twice = await bulk(acme.partnerToken, fields.seats!, [
      { deviceId: ids['A-01']!, value: 1 },
      { deviceId: ids['A-01']!, value: 2 },
    ]);
    expect(twice.status).toBe(400);
    expect(twice.body.error.details[0].path).toBe('body.values.1.deviceId');

    const required = await bulk(acme.partnerToken, fields.owner!, [
      { deviceId: ids['A-01']!, value: 'ops' },
      { deviceId: ids['A-02']!, value: null },
    ]);
    expect(required.status).toBe(400);
    expect(required.body.error.details[0].path).toBe('body.values.1.value');

    // An organization's field does not exist on another organization's device of the same partner.
    const local = await bulk(acme.partnerToken, fields.local!, [
      { deviceId: ids['A-01']!, value: 'R1' },
      { deviceId: ids.branch!, value: 'R2' },
    ]);
    expect(local.status).toBe(400);
    expect(local.body.error.details[0].path).toBe('body.values.1.deviceId');
    expect(await stored(fields.local!)).toEqual({});
    expect(await stored(fields.owner!)).toEqual({});
  });

  it('is 404 naming no device when one item is another tenant’s device, and writes nothing', async () => {
    const before = await stored(fields.tag!);
    const reply = await bulk(acme.partnerToken, fields.tag!, [
      { deviceId: ids['A-03']!, value: 'X' },
      { deviceId: ids.globex!, value: 'X' },
    ]);
    expect(reply.status).toBe(404);
    expect(JSON.stringify(reply.body)).not.toContain(ids.globex!);
    // An organization user reaches only its own organization's devices.
    const sibling = await bulk(acme.orgToken, fields.tag!, [{ deviceId: ids.branch!, value: 'X' }]);
    expect(sibling.status).toBe(404);
    expect(await stored(fields.tag!)).toEqual(before);
    // Another partner's field is 404 too.
    const foreignField = await bulk(globex.partnerToken, fields.tag!, [{ deviceId: ids.globex!, value: 'X' }]);
    expect(foreignField.status).toBe(404);
  });

  it('takes at most 1,000 items per call and needs devices:write', async () => {
    const tooMany = await bulk(
      acme.partnerToken,
      fields.tag!,
      Array.from({ length: 1001 }, () => ({ deviceId: ids['A-01']!, value: 'x' })),
    );
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body.error.details)).toContain('body.values');
    const reader = await orgUser(acme.partnerId, acme.orgId, 'org_viewer');
    const denied = await bulk(reader, fields.tag!, [{ deviceId: ids['A-01']!, value: 'x' }]);
    expect(denied.status).toBe(403);
  });
});
