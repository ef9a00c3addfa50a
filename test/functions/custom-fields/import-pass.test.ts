import { createHash, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let acme: Tenant;
let globex: Tenant;
let branchOrgId: string;

const post = (path: string, token: string, body: Record<string, unknown>) =>
  t.api.request('POST', `/api/v1/custom-fields/import/${path}`, { token, body });

async function summaries(action: string, partnerId: string) {
  const { rows } = await t.db.admin.query<{ orgId: string; details: Record<string, unknown> }>(
    `SELECT a.org_id AS "orgId", a.details FROM audit_logs a JOIN organizations o ON o.id = a.org_id
      WHERE a.action = :action::text AND o.partner_id = :partnerId::uuid ORDER BY a.timestamp, a.seq`,
    { action, partnerId },
  );
  return rows;
}

const header = 'Hostname,Asset Tag,Seats';
const lines = Array.from({ length: 9 }, (_, i) => `HOST-${i},TAG-${i},${i === 4 ? 'many' : i + 1}`);
const file = [header, ...lines].join('\n');
const fileSha = createHash('sha256').update(file).digest('hex');
const part = (from: number, to: number) => [header, ...lines.slice(from, to)].join('\n');

beforeAll(async () => {
  acme = await createTenant(t.api, 'Acme');
  globex = await createTenant(t.api, 'Globex');
  const branch = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: acme.partnerToken,
    body: { name: 'Acme Branch' },
  });
  branchOrgId = branch.body.id;
  for (let i = 0; i < 9; i++) await enrollDevice(t.api, acme, `HOST-${i}`);
  for (const body of [
    { name: 'Asset Tag', key: 'asset_tag', type: 'text' },
    { name: 'Seats', key: 'seats', type: 'number' },
  ]) {
    const created = await t.api.request('POST', '/api/v1/custom-fields', { token: acme.partnerToken, body });
    expect(created.status).toBe(201);
  }
});

describe('one summary audit row per committed pass', () => {
  it('writes one definitions summary for a partner of several organizations', async () => {
    const commit = await post('definitions', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: 'name,key,type,externalId\nRoom,room,text,f-room',
      fileName: 'fields.csv',
    });
    expect(commit.status, JSON.stringify(commit.body)).toBe(200);
    expect(commit.body.summary, JSON.stringify(commit.body)).toMatchObject({ create: 1 });
    const rows = await summaries('custom_field.import.definitions', acme.partnerId);
    expect(rows).toHaveLength(1);
    // The partner's oldest organization holds it; the other organization's trail has the definition, not the summary.
    expect(rows[0]!.orgId).toBe(acme.orgId);
    expect(rows[0]!.details).toMatchObject({ fileName: 'fields.csv', rows: 1, summary: { create: 1 } });
    const { rows: created } = await t.db.admin.query(
      `SELECT 1 FROM audit_logs WHERE action = 'custom_field.create' AND org_id = :orgId::uuid AND details::text LIKE '%f-room%'`,
      { orgId: branchOrgId },
    );
    expect(created).toHaveLength(1);
  });

  it('commits a file sent as three requests as one pass, with one summary row written by the last one', async () => {
    const pass = { id: randomUUID(), sha256: fileSha, rows: 9 };
    const send = (from: number, to: number) =>
      post('values', acme.partnerToken, {
        sourceSystem: 'generic',
        csv: part(from, to),
        fileName: 'values.csv',
        pass: { ...pass, firstRow: from },
      });
    const first = await send(0, 3);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.pass).toEqual({ id: pass.id, rows: 9, rowsCommitted: 3, closed: false, summaryWritten: false });
    // A retried part (its reply lost) counts its earlier writes as set, not unchanged.
    const retried = await send(0, 3);
    expect(retried.body.summary).toMatchObject({ set: 0, unchanged: 6 });
    const second = await send(3, 6);
    expect(second.body.summary).toMatchObject({ set: 5, invalid: 1 });
    expect(await summaries('custom_field.import.values', acme.partnerId)).toEqual([]);
    const last = await send(6, 9);
    expect(last.body.pass).toEqual({ id: pass.id, rows: 9, rowsCommitted: 9, closed: true, summaryWritten: true });
    const rows = await summaries('custom_field.import.values', acme.partnerId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.orgId).toBe(acme.orgId);
    expect(rows[0]!.details).toMatchObject({
      passId: pass.id,
      sourceSystem: 'generic',
      fileName: 'values.csv',
      sha256: fileSha,
      rows: 9,
      requests: 3,
      summary: { set: 17, unchanged: 0, invalid: 1, 'no-device': 0 },
    });
    // The closed pass takes a part again (idempotent) without a second summary.
    const late = await send(6, 9);
    expect(late.body.pass).toMatchObject({ closed: true, summaryWritten: false });
    expect(late.body.summary).toMatchObject({ set: 0, unchanged: 6 });
    expect(await summaries('custom_field.import.values', acme.partnerId)).toHaveLength(1);
  });

  it('refuses a part that does not belong to the pass, and hides another partner’s pass', async () => {
    const id = randomUUID();
    const open = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: part(0, 2),
      pass: { id, sha256: fileSha, rows: 9, firstRow: 0 },
    });
    expect(open.status).toBe(200);
    const otherFile = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: `${header}\nHOST-2,CHANGED,3`,
      pass: { id, sha256: 'a'.repeat(64), rows: 9, firstRow: 2 },
    });
    expect(otherFile.status).toBe(409);
    // Refused before anything is written.
    const { rows: tag } = await t.db.admin.query<{ value: string }>(
      `SELECT v.value FROM device_custom_field_values v JOIN devices d ON d.id = v.device_id
         JOIN custom_field_definitions f ON f.id = v.field_id WHERE d.hostname = 'HOST-2' AND f.key = 'asset_tag'`,
    );
    expect(tag).toEqual([{ value: 'TAG-2' }]);
    const changedPart = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: part(1, 3),
      pass: { id, sha256: fileSha, rows: 9, firstRow: 0 },
    });
    expect(changedPart.status).toBe(409);
    const overlapping = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: part(1, 3),
      pass: { id, sha256: fileSha, rows: 9, firstRow: 1 },
    });
    expect(overlapping.status).toBe(409);
    const pastTheEnd = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: part(0, 3),
      pass: { id, sha256: fileSha, rows: 9, firstRow: 8 },
    });
    expect(pastTheEnd.status).toBe(400);
    expect(pastTheEnd.body.error.details[0].path).toBe('body.pass.firstRow');
    const foreign = await post('values', globex.partnerToken, {
      sourceSystem: 'generic',
      csv: part(2, 4),
      pass: { id, sha256: fileSha, rows: 9, firstRow: 2 },
    });
    expect(foreign.status).toBe(404);
    expect(await summaries('custom_field.import.values', globex.partnerId)).toEqual([]);
  });

  it('writes one summary for a single-request commit, on the organization it names', async () => {
    await enrollDevice(t.api, { ...acme, orgId: branchOrgId, orgToken: acme.partnerToken }, 'BR-1');
    const before = (await summaries('custom_field.import.values', acme.partnerId)).length;
    const reply = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      orgId: branchOrgId,
      rows: [{ hostname: 'BR-1', asset_tag: 'BR' }],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const rows = await summaries('custom_field.import.values', acme.partnerId);
    expect(rows).toHaveLength(before + 1);
    expect(rows.at(-1)).toMatchObject({ orgId: branchOrgId, details: { orgId: branchOrgId, rows: 1 } });
  });

  it('counts what a part cut short had written as set when it is sent again', async () => {
    const csv = 'hostname,asset_tag,deviceExternalId\nHOST-7,CUT-7,old-7\nHOST-8,CUT-8,old-8';
    const pass = { id: randomUUID(), sha256: createHash('sha256').update(csv).digest('hex'), rows: 2, firstRow: 0 };
    const send = () => post('values', acme.partnerToken, { sourceSystem: 'generic', csv, fileName: 'cut.csv', pass });
    // The device mappings are stored after the values: refusing them cuts the request short once its values are in.
    await t.db.admin.query(`CREATE FUNCTION refuse_mapping() RETURNS trigger LANGUAGE plpgsql
      AS $$ BEGIN RAISE EXCEPTION 'mapping refused'; END $$`);
    await t.db.admin.query(`CREATE TRIGGER refuse_mapping BEFORE INSERT ON custom_field_device_mappings
      FOR EACH ROW EXECUTE FUNCTION refuse_mapping()`);
    try {
      expect((await send()).status).toBeGreaterThanOrEqual(500);
    } finally {
      await t.db.admin.query('DROP TRIGGER refuse_mapping ON custom_field_device_mappings');
      await t.db.admin.query('DROP FUNCTION refuse_mapping()');
    }
    const { rows: tags } = await t.db.admin.query<{ value: string }>(
      `SELECT v.value FROM device_custom_field_values v JOIN devices d ON d.id = v.device_id
         JOIN custom_field_definitions f ON f.id = v.field_id
        WHERE d.hostname IN ('HOST-7', 'HOST-8') AND f.key = 'asset_tag' ORDER BY v.value`,
    );
    expect(tags).toEqual([{ value: 'CUT-7' }, { value: 'CUT-8' }]);
    const again = await send();
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.summary).toMatchObject({ set: 0, unchanged: 2 });
    expect(again.body.pass).toMatchObject({ rowsCommitted: 2, summaryWritten: true });
    const summary = (await summaries('custom_field.import.values', acme.partnerId)).find(
      (row) => row.details.passId === pass.id,
    );
    expect(summary?.details).toMatchObject({ requests: 1, summary: { set: 2, unchanged: 0 } });
  });

  it('refuses a part overlapping one still being written, before writing anything', async () => {
    const id = randomUUID();
    const pass = { id, sha256: fileSha, rows: 9 };
    // A part claimed by a request that has not finished (as a concurrent request leaves it while it writes).
    await t.db.admin.query(
      `INSERT INTO custom_field_import_passes (id, partner_id, source_system, file_sha256, file_rows, parts)
       VALUES (:id::uuid, :partnerId::uuid, 'generic', :sha::text, 9,
               jsonb_build_object('0', jsonb_build_object('rows', 3, 'sha256', 'x', 'set', 0, 'summary', '{}'::jsonb,
                                                          'done', false)))`,
      { id, partnerId: acme.partnerId, sha: fileSha },
    );
    const overlapping = await post('values', acme.partnerToken, {
      sourceSystem: 'generic',
      csv: `${header}\nHOST-2,RACED,3`,
      pass: { ...pass, firstRow: 2 },
    });
    expect(overlapping.status).toBe(409);
    const { rows: tag } = await t.db.admin.query<{ value: string }>(
      `SELECT v.value FROM device_custom_field_values v JOIN devices d ON d.id = v.device_id
         JOIN custom_field_definitions f ON f.id = v.field_id WHERE d.hostname = 'HOST-2' AND f.key = 'asset_tag'`,
    );
    expect(tag).not.toEqual([{ value: 'RACED' }]);
  });
});
