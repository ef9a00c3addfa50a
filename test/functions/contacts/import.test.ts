import { beforeAll, describe, expect, it } from 'vitest';
import { nameSimilarityThreshold } from '#shared/contacts/import.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let other: Tenant;

const importPath = (orgId: string, preview = false) =>
  `/api/v1/orgs/organizations/${orgId}/contacts/import${preview ? '/preview' : ''}`;

async function countContacts(orgId: string) {
  const { rows } = await t.db.admin.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM contacts WHERE org_id = :orgId::uuid',
    { orgId },
  );
  return rows[0]!.n;
}

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
  other = await createTenant(t.api, 'Globex');
});

const psa = (externalId: string, name: string, extra: Record<string, unknown> = {}) => ({
  externalId,
  sourceSystem: 'autotask',
  name,
  ...extra,
});

describe('contact import (JSON)', () => {
  it('previews without storing, creates on commit, and a second identical import reports every row unchanged', async () => {
    const rows = [
      psa('p-1', 'Grace Hopper', { email: 'grace@acme.test', roles: ['primary'] }),
      psa('p-2', 'Alan Turing', { email: 'alan@acme.test', title: 'Engineer' }),
    ];
    const before = await countContacts(tenant.orgId);
    const preview = await t.api.request('POST', importPath(tenant.orgId, true), {
      token: tenant.orgToken,
      body: { rows },
    });
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({
      committed: false,
      summary: { create: 2, update: 0, unchanged: 0, held: 0, refused: 0 },
      rows: [
        { row: 1, externalId: 'p-1', annotation: 'create', outcome: 'create' },
        { row: 2, externalId: 'p-2', annotation: 'create', outcome: 'create' },
      ],
    });
    expect(await countContacts(tenant.orgId)).toBe(before);
    const commit = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body: { rows } });
    expect(commit.body.summary).toEqual({ create: 2, update: 0, unchanged: 0, held: 0, refused: 0 });
    expect(commit.body.rows[0].contactId).toEqual(expect.any(String));
    expect(await countContacts(tenant.orgId)).toBe(before + 2);
    const again = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body: { rows } });
    expect(again.body.summary).toEqual({ create: 0, update: 0, unchanged: 2, held: 0, refused: 0 });
    expect(again.body.rows.map((r: { annotation: string }) => r.annotation)).toEqual(['unchanged', 'unchanged']);
    expect(await countContacts(tenant.orgId)).toBe(before + 2);
    const changed = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [psa('p-2', 'Alan Turing', { title: 'Chief Engineer' })] },
    });
    expect(changed.body.rows[0]).toMatchObject({ annotation: 'update', outcome: 'update' });
    const { rows: audits } = await t.db.admin.query<{ action: string; details: Record<string, unknown> }>(
      `SELECT action, details FROM audit_logs WHERE org_id = :orgId::uuid AND action LIKE 'contact.%' ORDER BY seq`,
      { orgId: tenant.orgId },
    );
    expect(audits.map((a) => a.action)).toEqual([
      'contact.create',
      'contact.create',
      'contact.import',
      'contact.import',
      'contact.update',
      'contact.import',
    ]);
    expect(audits[2]!.details).toMatchObject({ rows: 2, create: 2, unchanged: 0 });
    expect(audits[4]!.details).toMatchObject({ before: { title: 'Engineer' }, after: { title: 'Chief Engineer' } });
  });

  it('holds an e-mail match back until acknowledged, then links the row to the matched contact', async () => {
    const existing = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
      token: tenant.orgToken,
      body: { name: 'Margaret Hamilton', email: 'Margaret@Acme.test' },
    });
    const row = psa('p-10', 'M. Hamilton', { email: '  margaret@acme.TEST ' });
    const commit = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [row] },
    });
    expect(commit.body.rows[0]).toMatchObject({
      annotation: 'email-match',
      outcome: 'held',
      contactId: existing.body.id,
      match: { contactId: existing.body.id, name: 'Margaret Hamilton' },
    });
    expect(commit.body.summary.held).toBe(1);
    const linked = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [{ ...row, acknowledge: { annotation: 'email-match', contactId: existing.body.id } }] },
    });
    expect(linked.body.rows[0]).toMatchObject({
      annotation: 'email-match',
      outcome: 'update',
      contactId: existing.body.id,
    });
    const contact = await t.api.request('GET', `/api/v1/contacts/${existing.body.id}`, { token: tenant.orgToken });
    expect(contact.body).toMatchObject({ name: 'M. Hamilton', externalId: 'p-10', sourceSystem: 'autotask' });
    const again = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [row] },
    });
    expect(again.body.rows[0]).toMatchObject({ annotation: 'unchanged', outcome: 'unchanged' });
  });

  it('holds a similar name, creates a new contact when acknowledged without contactId, and refuses a stale acknowledgement', async () => {
    await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
      token: tenant.orgToken,
      body: { name: 'Katherine Johnson' },
    });
    const row = psa('p-20', 'Katherine Johnsen');
    const preview = await t.api.request('POST', importPath(tenant.orgId, true), {
      token: tenant.orgToken,
      body: { rows: [row] },
    });
    expect(preview.body.rows[0]).toMatchObject({ annotation: 'name-match', outcome: 'held' });
    expect(preview.body.rows[0].match.similarity).toBeGreaterThanOrEqual(nameSimilarityThreshold);
    const stale = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [{ ...row, acknowledge: { annotation: 'email-match' } }] },
    });
    expect(stale.body.rows[0]).toMatchObject({
      outcome: 'refused',
      reason: expect.stringMatching(/Changed since preview/),
    });
    const wrongTarget = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        rows: [
          { ...row, acknowledge: { annotation: 'name-match', contactId: '00000000-0000-4000-8000-000000000000' } },
        ],
      },
    });
    expect(wrongTarget.body.rows[0].outcome).toBe('refused');
    const created = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { rows: [{ ...row, acknowledge: { annotation: 'name-match' } }] },
    });
    expect(created.body.rows[0]).toMatchObject({ outcome: 'create' });
    expect(created.body.rows[0].contactId).not.toBe(preview.body.rows[0].match.contactId);
  });

  it('refuses an acknowledged row whose annotation changed since preview because another import ran in between', async () => {
    await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
      token: tenant.orgToken,
      body: { name: 'Hedy Lamarr', email: 'hedy@acme.test' },
    });
    const row = psa('p-30', 'Hedy Lamarr', { email: 'hedy@acme.test' });
    const preview = await t.api.request('POST', importPath(tenant.orgId, true), {
      token: tenant.orgToken,
      body: { rows: [row] },
    });
    expect(preview.body.rows[0].annotation).toBe('email-match');
    await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        rows: [{ ...row, acknowledge: { annotation: 'email-match', contactId: preview.body.rows[0].contactId } }],
      },
    });
    const late = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        rows: [
          {
            ...row,
            name: 'Hedy K. Lamarr',
            acknowledge: { annotation: 'email-match', contactId: preview.body.rows[0].contactId },
          },
        ],
      },
    });
    expect(late.body.rows[0]).toMatchObject({ annotation: 'update', outcome: 'refused' });
  });

  it('reports invalid and conflicting rows per row and applies the rest', async () => {
    const reply = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        rows: [
          psa('p-40', 'Twice'),
          psa('p-40', 'Twice again'),
          { name: 'No e-mail', email: 'nope' },
          psa('p-41', 'Foreign site', { siteId: other.siteId }),
          { name: 'Fine without key' },
          { externalId: 'p-42' },
        ],
      },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.rows).toMatchObject([
      { row: 1, externalId: 'p-40', annotation: 'conflict', outcome: 'refused' },
      { row: 2, externalId: 'p-40', annotation: 'conflict', outcome: 'refused' },
      { row: 3, annotation: 'invalid', outcome: 'refused', issues: [{ path: 'email' }] },
      { row: 4, annotation: 'invalid', outcome: 'refused', issues: [{ path: 'siteId', message: 'Unknown site' }] },
      { row: 5, annotation: 'create', outcome: 'create' },
      { row: 6, annotation: 'invalid', outcome: 'refused', issues: [{ path: 'name' }] },
    ]);
    expect(reply.body.rows[2].externalId).toBeUndefined();
    expect(reply.body.summary).toEqual({ create: 1, update: 0, unchanged: 0, held: 0, refused: 5 });
  });

  it("never matches or names another tenant's contacts", async () => {
    await t.api.request('POST', `/api/v1/orgs/organizations/${other.orgId}/contacts`, {
      token: other.orgToken,
      body: { name: 'Globex Secret Person', email: 'secret@globex.test', sourceSystem: 'autotask', externalId: 'g-1' },
    });
    const reply = await t.api.request('POST', importPath(tenant.orgId, true), {
      token: tenant.orgToken,
      body: { rows: [psa('g-1', 'Globex Secret Person', { email: 'secret@globex.test' })] },
    });
    expect(reply.body.rows[0]).toMatchObject({ annotation: 'create' });
    expect(JSON.stringify(reply.body)).not.toContain('match');
    const foreign = await t.api.request('POST', importPath(other.orgId, true), {
      token: tenant.orgToken,
      body: { rows: [{ name: 'x' }] },
    });
    expect(foreign.status).toBe(404);
  });

  it('the name threshold keeps a dropped letter or swapped order and parts different first names', async () => {
    const { rows } = await t.db.admin.query<{ a: number; b: number; c: number; d: number }>(
      `SELECT similarity('Jon Smith', 'John Smith') AS a, similarity('Smith, John', 'John Smith') AS b,
              similarity('Katherine Johnsen', 'Katherine Johnson') AS c, similarity('Jane Doe', 'John Doe') AS d`,
    );
    const s = rows[0]!;
    expect([s.a, s.b, s.c].every((v) => v >= nameSimilarityThreshold)).toBe(true);
    expect(s.d).toBeLessThan(nameSimilarityThreshold);
  });
});

describe('contact import (CSV)', () => {
  it('reads a header row with a column mapping and roles separated by semicolons', async () => {
    const csv = [
      'Contact ID,Full Name,E-mail,Roles,Ignored',
      'c-1,"Lovelace, Ada",ada@csv.test,primary;billing,x',
      'c-2,"Babbage ""Charles""",,technical,y',
      '',
    ].join('\r\n');
    const body = {
      csv,
      sourceSystem: 'datto',
      mapping: { externalId: 'Contact ID', name: 'Full Name', email: 'E-mail', roles: 'Roles' },
    };
    const commit = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body });
    expect(commit.status).toBe(200);
    expect(commit.body.summary).toEqual({ create: 2, update: 0, unchanged: 0, held: 0, refused: 0 });
    const { rows } = await t.db.admin.query(
      `SELECT name, email, roles, source_system AS "sourceSystem" FROM contacts WHERE external_id IN ('c-1', 'c-2') AND org_id = :orgId::uuid ORDER BY external_id`,
      { orgId: tenant.orgId },
    );
    expect(rows).toEqual([
      { name: 'Lovelace, Ada', email: 'ada@csv.test', roles: ['primary', 'billing'], sourceSystem: 'datto' },
      { name: 'Babbage "Charles"', email: null, roles: ['technical'], sourceSystem: 'datto' },
    ]);
    const again = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body });
    expect(again.body.summary.unchanged).toBe(2);
  });

  it('takes acknowledgements by row number (from 1) for held CSV rows', async () => {
    const existing = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/contacts`, {
      token: tenant.orgToken,
      body: { name: 'Barbara Liskov', email: 'barbara@acme.test' },
    });
    const csv = 'externalId,name,email\nb-1,Barbara Liskov,BARBARA@acme.test\n';
    const held = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: { csv, sourceSystem: 'datto' },
    });
    expect(held.body.rows[0]).toMatchObject({ annotation: 'email-match', outcome: 'held' });
    const linked = await t.api.request('POST', importPath(tenant.orgId), {
      token: tenant.orgToken,
      body: {
        csv,
        sourceSystem: 'datto',
        acknowledgements: [{ row: 1, annotation: 'email-match', contactId: existing.body.id }],
      },
    });
    expect(linked.body.rows[0]).toMatchObject({ outcome: 'update', contactId: existing.body.id });
  });

  it.each([
    ['name,email\n"Open quote,a@b.test\n', /Row 1, column 1: a quoted field is not closed/],
    ['name,email\nOne,a@b.test,extra\n', /Row 1, column 3: 3 columns where the header has 2/],
    ['name,email\nOk,a@b.test\nShort\n', /Row 2, column 2: 1 columns where the header has 2/],
    ['name,email\nA"b,a@b.test\n', /Row 1, column 1: a quote inside an unquoted field/],
  ])('refuses a malformed CSV with a 400 naming row and column, storing nothing', async (csv, message) => {
    const before = await countContacts(tenant.orgId);
    const reply = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body: { csv } });
    expect(reply.status).toBe(400);
    expect(reply.body.error.details[0]).toMatchObject({ path: 'body.csv', message: expect.stringMatching(message) });
    expect(await countContacts(tenant.orgId)).toBe(before);
  });

  it('refuses a body with both rows and csv, or neither', async () => {
    for (const body of [{}, { rows: [{ name: 'a' }], csv: 'name\na\n' }]) {
      const reply = await t.api.request('POST', importPath(tenant.orgId), { token: tenant.orgToken, body });
      expect(reply.status).toBe(400);
    }
  });
});
