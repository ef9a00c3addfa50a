import { beforeAll, describe, expect, it } from 'vitest';
import { annotations, outcomes } from '#shared/imports/schemas.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Vocabulary');
});

interface Reply {
  committed: boolean;
  summary: Record<string, number>;
  rows: { row: number; externalId?: string; annotation: string; outcome: string }[];
}

const post = async (path: string, body: unknown, token = tenant.partnerToken) => {
  const reply = await t.api.request('POST', `/api/v1${path}`, { token, body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body as Reply;
};

const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();

/** The same import request to each importer: two rows, the first with an externalId, the second without. */
const importers = () => ({
  contacts: (commit: boolean) =>
    post(`/orgs/organizations/${tenant.orgId}/contacts/import${commit ? '' : '/preview'}`, {
      sourceSystem: 'psa',
      csv: 'name,email,externalId\nAda Lovelace,ada@vocabulary.test,p-1\nGrace Hopper,,\n',
    }),
  'device-groups': (commit: boolean) =>
    post(`/orgs/organizations/${tenant.orgId}/device-groups/import${commit ? '' : '/preview'}`, {
      groups: [
        {
          sourceSystem: 'ninjaone',
          externalId: 'g-1',
          name: 'Windows',
          filter: { field: 'osType', op: 'equals', value: 'windows' },
        },
        { sourceSystem: 'ninjaone', externalId: 'g-2', name: 'Bad', filter: { field: 'nope', op: 'equals', value: 1 } },
      ],
    }),
  'tenancy tree': (commit: boolean) =>
    post(`/orgs/import${commit ? '' : '/preview'}`, {
      sourceSystem: 'datto-rmm',
      csv: 'name,externalId,siteName\nVocabulary Two,v-2,HQ\nVocabulary Three,,\n',
    }),
  'custom-field definitions': (commit: boolean) =>
    post(`/custom-fields/import/definitions${commit ? '' : '/preview'}`, {
      sourceSystem: 'generic',
      csv: 'name,key,type,choices,externalId\nShelf,shelf,text,,f-1\nColour,colour,text,,\n',
    }),
  'custom-field values': (commit: boolean) =>
    post(`/custom-fields/import/values${commit ? '' : '/preview'}`, {
      sourceSystem: 'generic',
      csv: 'deviceExternalId,hostname,serialNumber\nd-1,NO-SUCH-HOST,\n,NOR-THIS,\n',
    }),
  'audit history': (commit: boolean) =>
    post(`/audit-logs/import${commit ? '' : '/preview'}`, {
      orgId: tenant.orgId,
      sourceSystem: 'datto',
      csv: `externalId,timestamp,action\nh-1,${anHourAgo},device.reboot\n,${anHourAgo},device.reboot\n`,
    }),
});

describe('every row import answers in one vocabulary', () => {
  it('numbers rows from 1, echoes the externalId given, uses the shared words and never says created', async () => {
    const summaries: Record<string, string[]> = {};
    for (const [name, run] of Object.entries(importers())) {
      const preview = await run(false);
      const commit = await run(true);
      for (const reply of [preview, commit]) {
        expect(
          reply.rows.map((row) => row.row),
          name,
        ).toEqual([1, 2]);
        expect(reply.rows[0]!.externalId, name).toBe(
          { contacts: 'p-1', 'device-groups': 'g-1', 'tenancy tree': 'v-2' }[name] ??
            { 'custom-field definitions': 'f-1', 'custom-field values': 'd-1', 'audit history': 'h-1' }[name],
        );
        for (const row of reply.rows) {
          expect(annotations, name).toContain(row.annotation);
          expect(outcomes, name).toContain(row.outcome);
        }
      }
      expect(preview.committed).toBe(false);
      expect(JSON.stringify(preview), name).not.toMatch(/"created"|"updated"|"matched"/);
      expect(JSON.stringify(commit), name).not.toMatch(/"created"|"updated"|"matched"/);
      summaries[name] = Object.keys(commit.summary).sort();
    }
    const rowImporters = ['contacts', 'device-groups', 'tenancy tree', 'custom-field definitions', 'audit history'];
    for (const name of rowImporters) expect(summaries[name], name).toEqual([...outcomes].sort());
  });

  it('reads blank CSV cells and empty JSON strings alike, and reports the same rows for both', async () => {
    const path = `/orgs/organizations/${tenant.orgId}/contacts/import/preview`;
    const csv = await post(path, {
      csv: 'name,email,phone,externalId,sourceSystem\nLin,,,,\nKay,kay@v.test, ,k-1,psa\n',
    });
    const json = await post(path, {
      rows: [
        { name: 'Lin', email: '', phone: '', externalId: '', sourceSystem: '' },
        { name: 'Kay', email: 'kay@v.test', phone: ' ', externalId: 'k-1', sourceSystem: 'psa' },
      ],
    });
    expect(json).toEqual(csv);
    expect(csv.rows.map((row) => [row.row, row.externalId, row.annotation])).toEqual([
      [1, undefined, 'create'],
      [2, 'k-1', 'create'],
    ]);
  });

  it('echoes the externalId of an invalid row, and numbers CSV errors as it numbers rows', async () => {
    const path = `/orgs/organizations/${tenant.orgId}/contacts/import/preview`;
    const invalid = await post(path, { rows: [{ name: 'Ok' }, { externalId: 'x-9', sourceSystem: 'psa' }] });
    expect(invalid.rows[1]).toMatchObject({ row: 2, externalId: 'x-9', annotation: 'invalid', outcome: 'refused' });
    const malformed = await t.api.request('POST', `/api/v1${path}`, {
      token: tenant.partnerToken,
      body: { csv: 'name,email\nOk,a@v.test\nShort\n' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].message).toMatch(/^Row 2, column 2/);
  });
});
