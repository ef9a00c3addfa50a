import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
const devices: Record<string, string> = {};

async function enroll(tenant: Tenant, hostname: string, serialNumber?: string) {
  const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
    token: tenant.orgToken,
    body: {},
  });
  const reply = await t.api.request('POST', '/api/v1/agents/enroll', {
    body: { enrollmentKey: key.body.key, hostname, serialNumber },
  });
  return reply.body.deviceId as string;
}

const post = (path: string, token: string, body: Record<string, unknown>) =>
  t.api.request('POST', `/api/v1/custom-fields/import/${path}`, { token, body });

const dattoUdfs = ['udf,label', 'udf1,Asset Tag', 'udf2,Warranty Expiry', 'udf3,', 'udf4,BitLocker Key ID'].join('\n');

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  devices.web = await enroll(acme, 'WEB-01', 'CZ1111');
  devices.db = await enroll(acme, 'DB-01', 'To be filled by O.E.M.');
  devices.twinA = await enroll(acme, 'KIOSK', 'SAME-SERIAL');
  devices.twinB = await enroll(acme, 'kiosk', 'SAME-SERIAL');
  devices.globex = await enroll(globex, 'WEB-02', 'CZ2222');
});

describe('the definitions pass', () => {
  it('proposes partner-wide definitions from Datto RMM UDFs, commits them once, and a second run changes nothing', async () => {
    const preview = await post('definitions/preview', acme.partnerToken, { sourceSystem: 'datto-rmm', csv: dattoUdfs });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(
      preview.body.rows.map(
        (r: { row: number; externalId: string; key: string; annotation: string; outcome: string }) => [
          r.row,
          r.externalId,
          r.key,
          r.annotation,
          r.outcome,
        ],
      ),
    ).toEqual([
      [1, 'udf1', 'asset_tag', 'create', 'create'],
      [2, 'udf2', 'warranty_expiry', 'create', 'create'],
      [3, 'udf3', null, 'invalid', 'refused'],
      [4, 'udf4', 'bit_locker_key_id', 'create', 'create'],
    ]);
    const { rows } = await t.db.admin.query('SELECT 1 FROM custom_field_definitions');
    expect(rows).toEqual([]);
    const acknowledgements = preview.body.rows.map((r: { row: number; annotation: string }) => ({
      row: r.row,
      annotation: r.annotation,
    }));
    const commit = await post('definitions', acme.partnerToken, {
      sourceSystem: 'datto-rmm',
      csv: dattoUdfs,
      fileName: 'udfs.csv',
      acknowledgements,
    });
    expect(commit.body.summary).toEqual({ create: 3, update: 0, unchanged: 0, held: 0, refused: 1 });
    const fields = await t.api.request('GET', '/api/v1/custom-fields', { token: acme.orgToken });
    expect(
      fields.body.data.map((f: { key: string; orgId: null; externalId: string }) => [f.key, f.orgId, f.externalId]),
    ).toEqual([
      ['asset_tag', null, 'udf1'],
      ['bit_locker_key_id', null, 'udf4'],
      ['warranty_expiry', null, 'udf2'],
    ]);
    const again = await post('definitions', acme.partnerToken, {
      sourceSystem: 'datto-rmm',
      csv: dattoUdfs,
      acknowledgements,
    });
    expect(again.body.summary).toEqual({ create: 0, update: 0, unchanged: 3, held: 0, refused: 1 });
    const summaries = await t.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'custom_field.import.definitions' AND org_id = :orgId::uuid ORDER BY seq`,
      { orgId: acme.orgId },
    );
    expect(summaries.rows[0]!.details).toMatchObject({ sourceSystem: 'datto-rmm', fileName: 'udfs.csv', rows: 4 });
    expect(summaries.rows[0]!.details.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reads NinjaOne fields with their types and choices, and shows collisions', async () => {
    const rows = [
      { name: 'assetTag', label: 'Asset tag', type: 'TEXT' },
      { name: 'tier', label: 'Tier', type: 'DROPDOWN', options: ['Gold', 'Silver'] },
      { name: 'adminPassword', label: 'Admin password', type: 'TEXT_ENCRYPTED' },
      { name: 'seats', label: 'Seats', type: 'INTEGER' },
    ];
    const preview = await post('definitions/preview', acme.partnerToken, { sourceSystem: 'ninjaone', rows });
    expect(
      preview.body.rows.map((r: { key: string; type: string; annotation: string }) => [r.key, r.type, r.annotation]),
    ).toEqual([
      ['asset_tag', 'text', 'conflict'],
      ['tier', 'dropdown', 'create'],
      ['admin_password', null, 'invalid'],
      ['seats', 'number', 'create'],
    ]);
    expect(preview.body.rows[0].reason).toContain('Asset Tag');
    expect(preview.body.rows[1].choices).toEqual(['Gold', 'Silver']);
  });

  it('reads the generic CSV as documented (name, key, type, choices): the key identifies a row without an id', async () => {
    const csv = 'name,key,type,choices\nRack,rack,text,\nTier,tier,dropdown,Gold|Silver\n';
    const preview = await post('definitions/preview', globex.partnerToken, { sourceSystem: 'generic', csv });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.rows).toEqual([
      {
        row: 1,
        externalId: 'rack',
        annotation: 'create',
        outcome: 'create',
        name: 'Rack',
        key: 'rack',
        type: 'text',
        choices: null,
      },
      {
        row: 2,
        externalId: 'tier',
        annotation: 'create',
        outcome: 'create',
        name: 'Tier',
        key: 'tier',
        type: 'dropdown',
        choices: ['Gold', 'Silver'],
      },
    ]);
    const commit = await post('definitions', globex.partnerToken, { sourceSystem: 'generic', csv });
    expect(commit.body.summary).toEqual({ create: 2, update: 0, unchanged: 0, held: 0, refused: 0 });
    const again = await post('definitions', globex.partnerToken, {
      sourceSystem: 'generic',
      rows: [
        { name: 'Rack', key: 'rack', type: 'text', choices: '' },
        { name: 'Tier', key: 'tier', type: 'dropdown', choices: 'Gold|Silver' },
      ],
    });
    expect(again.body.rows.map((r: { annotation: string; outcome: string }) => [r.annotation, r.outcome])).toEqual([
      ['unchanged', 'unchanged'],
      ['unchanged', 'unchanged'],
    ]);
  });

  it('is refused to organization users', async () => {
    const reply = await post('definitions/preview', acme.orgToken, {
      sourceSystem: 'generic',
      csv: 'name,key,type\nA,a,text',
    });
    expect(reply.status).toBe(403);
  });
});

describe('the values pass', () => {
  const csv = [
    'Device UID,Hostname,Serial Number,Udf1,Udf2,Udf4,Colour',
    'd-web,web-01,CZ1111,HQ-1,2027-01-31,,blue',
    'd-db,DB-01,To be filled by O.E.M.,HQ-2,31/01/2027,K-9,red',
    'd-kiosk,Kiosk,,HQ-3,,,',
    'd-twin,other,SAME-SERIAL,HQ-4,,,',
    'd-gone,nowhere,NOPE,HQ-5,,,',
    'd-globex,WEB-02,CZ2222,HQ-6,,,',
  ].join('\n');

  it('resolves rows by serial then hostname, never guesses, and derives each field', async () => {
    const preview = await post('values/preview', acme.partnerToken, { sourceSystem: 'datto-rmm', csv });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.columns).toEqual({
      'Device UID': 'deviceExternalId',
      Hostname: 'hostname',
      'Serial Number': 'serialNumber',
      Udf1: 'field:asset_tag',
      Udf2: 'field:warranty_expiry',
      Udf4: 'field:bit_locker_key_id',
      Colour: null,
    });
    const rows = preview.body.rows;
    expect(
      rows.map((r: { row: number; externalId: string; annotation: string; outcome: string; resolvedBy: string }) => [
        r.row,
        r.externalId,
        r.annotation,
        r.outcome,
        r.resolvedBy,
      ]),
    ).toEqual([
      [1, 'd-web', 'update', 'update', 'serialNumber'],
      [2, 'd-db', 'update', 'update', 'hostname'],
      [3, 'd-kiosk', 'conflict', 'refused', null],
      [4, 'd-twin', 'conflict', 'refused', null],
      [5, 'd-gone', 'invalid', 'refused', null],
      [6, 'd-globex', 'invalid', 'refused', null],
    ]);
    expect(rows[0].deviceId).toBe(devices.web);
    expect(rows[1].fields.map((f: { key: string; status: string }) => [f.key, f.status])).toEqual([
      ['asset_tag', 'set'],
      // Datto RMM UDFs are text: any date form is text there.
      ['warranty_expiry', 'set'],
      ['bit_locker_key_id', 'set'],
    ]);
    expect(preview.body.summary).toMatchObject({ set: 5, invalid: 0, ambiguous: 2, 'no-device': 2 });
    const { rows: stored } = await t.db.admin.query('SELECT 1 FROM device_custom_field_values');
    expect(stored).toEqual([]);
  });

  it('commits only set fields, audits per device, keeps the device ids, and a second run is all unchanged', async () => {
    const preview = await post('values/preview', acme.partnerToken, { sourceSystem: 'datto-rmm', csv });
    const expected = preview.body.rows.map((r: { row: number; digest: string }) => ({ row: r.row, digest: r.digest }));
    const commit = await post('values', acme.partnerToken, {
      sourceSystem: 'datto-rmm',
      csv,
      fileName: 'udf-values.csv',
      expected,
    });
    expect(commit.status, JSON.stringify(commit.body)).toBe(200);
    expect(commit.body.summary).toMatchObject({ set: 5, refused: 0 });
    const web = await t.api.request('GET', `/api/v1/devices/${devices.web}`, { token: acme.orgToken });
    expect(web.body.customFields).toEqual({ asset_tag: 'HQ-1', warranty_expiry: '2027-01-31' });
    const { rows: audits } = await t.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'device.update' AND resource_id = :id::uuid`,
      { id: devices.db },
    );
    expect(audits).toHaveLength(1);
    expect(audits[0]!.details).toMatchObject({
      before: { customFields: { asset_tag: null, warranty_expiry: null, bit_locker_key_id: null } },
      after: { customFields: { asset_tag: 'HQ-2', warranty_expiry: '31/01/2027', bit_locker_key_id: 'K-9' } },
    });
    const { rows: summary } = await t.db.admin.query<{ details: Record<string, unknown> }>(
      `SELECT details FROM audit_logs WHERE action = 'custom_field.import.values'`,
    );
    expect(summary).toHaveLength(1);
    expect(summary[0]!.details).toMatchObject({ fileName: 'udf-values.csv', sourceSystem: 'datto-rmm' });

    const again = await post('values', acme.partnerToken, { sourceSystem: 'datto-rmm', csv, expected });
    expect(again.body.summary).toMatchObject({ set: 0, unchanged: 5, refused: 0 });

    // The device ids of the other RMM are kept: a later file naming only them (and new hostnames) still resolves.
    const later = await post('values/preview', acme.partnerToken, {
      sourceSystem: 'datto-rmm',
      rows: [{ deviceUid: 'd-db', hostname: 'renamed', udf1: 'HQ-22' }],
    });
    expect(later.body.rows[0]).toMatchObject({ deviceId: devices.db, resolvedBy: 'deviceExternalId' });
  });

  it('refuses rows whose derivation changed since preview', async () => {
    const rows = [{ hostname: 'WEB-01', asset_tag: 'HQ-100' }];
    const preview = await post('values/preview', acme.partnerToken, { sourceSystem: 'generic', rows });
    await t.api.request('PUT', `/api/v1/devices/${devices.web}/custom-fields/asset_tag`, {
      token: acme.orgToken,
      body: { value: 'HQ-100' },
    });
    // Another write set the same value: the row still reads as the preview showed it.
    const same = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      rows,
      expected: [{ row: 1, digest: preview.body.rows[0].digest }],
    });
    expect(same.body.rows[0]).toMatchObject({ annotation: 'unchanged', outcome: 'unchanged' });
    const changed = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      rows: [{ hostname: 'WEB-01', asset_tag: 'HQ-101' }],
      expected: [{ row: 1, digest: preview.body.rows[0].digest }],
    });
    expect(changed.body.rows[0]).toMatchObject({ annotation: 'update', outcome: 'refused' });
    const web = await t.api.request('GET', `/api/v1/devices/${devices.web}`, { token: acme.orgToken });
    expect(web.body.customFields.asset_tag).toBe('HQ-100');
  });

  it('resumes: a commit interrupted after part of its values, repeated, ends as one whole commit', async () => {
    const rows = [
      { hostname: 'WEB-01', asset_tag: 'R-1', bit_locker_key_id: 'B-1' },
      { hostname: 'DB-01', asset_tag: 'R-2', bit_locker_key_id: 'B-2' },
    ];
    const preview = await post('values/preview', acme.partnerToken, { sourceSystem: 'generic', rows });
    const expected = preview.body.rows.map((r: { row: number; digest: string }) => ({ row: r.row, digest: r.digest }));
    // The first pass stopped after its first chunk: the first row's values are stored, the second's are not.
    await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      rows: rows.slice(0, 1),
      expected: expected.slice(0, 1),
    });
    const resumed = await post('values', acme.partnerToken, { sourceSystem: 'generic', rows, expected });
    expect(resumed.body.summary).toMatchObject({ set: 2, unchanged: 2, refused: 0 });
    for (const [device, tag] of [
      [devices.web, 'R-1'],
      [devices.db, 'R-2'],
    ] as const) {
      const reply = await t.api.request('GET', `/api/v1/devices/${device}`, { token: acme.orgToken });
      expect(reply.body.customFields.asset_tag).toBe(tag);
    }
  });

  it('reads blank serial cells and empty strings as absent, in CSV and JSON alike', async () => {
    const csv = await post('values/preview', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: 'hostname,serialNumber,asset_tag\nWEB-01,,T-1\n',
    });
    const json = await post('values/preview', acme.partnerToken, {
      sourceSystem: 'generic',
      rows: [{ hostname: 'WEB-01', serialNumber: '', asset_tag: 'T-1' }],
    });
    for (const reply of [csv, json]) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.rows[0]).toMatchObject({ row: 1, annotation: 'update', resolvedBy: 'hostname' });
    }
  });

  it('maps columns explicitly, and resolves hostnames within the named organization only', async () => {
    const reply = await post('values/preview', acme.orgToken, {
      sourceSystem: 'generic',
      orgId: acme.orgId,
      csv: 'Machine,Tag,Note\nweb-01,HQ-7,x\nWEB-02,HQ-8,y',
      mapping: { Machine: 'hostname', Tag: 'field:asset_tag', Note: 'field:no_such_key' },
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body.rows[0].fields.map((f: { key: string; status: string }) => [f.key, f.status])).toEqual([
      ['asset_tag', 'set'],
      ['no_such_key', 'no-definition'],
    ]);
    expect(reply.body.rows[1]).toMatchObject({ row: 2, annotation: 'invalid', outcome: 'refused' });
    const foreign = await post('values/preview', acme.orgToken, {
      sourceSystem: 'generic',
      orgId: globex.orgId,
      csv: 'hostname\nx',
    });
    expect(foreign.status).toBe(404);
  });
});
