import { beforeAll, describe, expect, it } from 'vitest';
import { auditChecksum, canonicalFields } from '#shared/audit/canonical.ts';
import { appendAudit, type Sealed } from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const ORGS = '/api/v1/orgs/organizations';
const EXPORT = '/api/v1/audit-logs/export';
const columns = [...canonicalFields, 'checksum'];
const t = useApi();
let a: Tenant;
let b: Tenant;
let a2: string;
let bulk: string;
let noise: string;
let rows: Sealed[];

/** A download over real HTTP, as text (fetch undoes a gzip content-encoding). */
async function download(
  query: string,
  token: string,
  headers: Record<string, string> = { 'accept-encoding': 'identity' },
) {
  const response = await fetch(`${t.api.url}${EXPORT}?${query}`, {
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** RFC 4180 records; an unquoted empty field reads as null, a quoted one as '' (as PostgreSQL's COPY reads CSV). */
function parseCsv(text: string): (string | null)[][] {
  const records: (string | null)[][] = [];
  let record: (string | null)[] = [];
  let i = 0;
  while (i < text.length) {
    let value: string | null;
    if (text[i] === '"') {
      value = '';
      i += 1;
      for (;;) {
        const quote = text.indexOf('"', i);
        value += text.slice(i, quote);
        i = quote + 1;
        if (text[i] !== '"') break;
        value += '"';
        i += 1;
      }
    } else {
      const end = text.slice(i).search(/,|\r\n/);
      value = text.slice(i, i + end) || null;
      i += end;
    }
    record.push(value);
    if (text.startsWith('\r\n', i)) {
      records.push(record);
      record = [];
      i += 2;
    } else i += 1;
  }
  return records;
}

/** Undoes the formula-injection guard: a leading ' was added to the value. */
const unguard = (cell: string | null) => (cell?.startsWith("'") ? cell.slice(1) : cell);

const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 10, minute)).toISOString();

beforeAll(async () => {
  a = await createTenant(t.api, 'Alpha');
  b = await createTenant(t.api, 'Beta');
  a2 = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Two' } })).body.id;
  bulk = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Bulk' } })).body.id;
  noise = (await t.api.request('POST', ORGS, { token: a.partnerToken, body: { name: 'Alpha Noise' } })).body.id;
  rows = await appendAudit(t.db.admin, [
    {
      orgId: a.orgId,
      timestamp: at(1),
      action: 'device.create',
      resourceName: 'Lab, "north" wing',
      details: { note: 'line one\r\nline two', unicode: 'Zürich ✓' },
    },
    {
      orgId: a.orgId,
      timestamp: at(2),
      action: 'device.update',
      resourceName: '=HYPERLINK("http://evil.test")',
      actorEmail: '@admin',
      userAgent: '+cmd',
      errorMessage: '-1\r\nsee log',
    },
    {
      orgId: a.orgId,
      timestamp: at(3),
      action: 'device.delete',
      resourceName: "'quoted",
      actorEmail: null,
      userAgent: '',
      ipAddress: null,
    },
  ]);
  await appendAudit(t.db.admin, [{ orgId: a2, timestamp: at(4), action: 'script.execute' }]);
  await appendAudit(t.db.admin, [{ orgId: b.orgId, timestamp: at(5), action: 'device.create' }]);
  // 10,050 rows of compressible padding, and 5,000 of random text that gzip cannot shrink enough.
  await t.db.admin.query(
    `INSERT INTO audit_entries (org_id, timestamp, actor_type, actor_id, action, details)
     SELECT :orgId::uuid, timestamp '2027-01-01' + g * interval '1 second', 'system', gen_random_uuid(), 'bulk.row', jsonb_build_object('pad', repeat('x', 600), 'n', g)
       FROM generate_series(1, 10050) g`,
    { orgId: bulk },
  );
  await t.db.admin.query(
    `INSERT INTO audit_entries (org_id, timestamp, actor_type, actor_id, action, details)
     SELECT :orgId::uuid, timestamp '2027-01-01' + g * interval '1 second', 'system', gen_random_uuid(), 'noise.row',
            jsonb_build_object('noise', (SELECT string_agg(md5(random()::text || g || k), '') FROM generate_series(1, 80) k))
       FROM generate_series(1, 5000) g`,
    { orgId: noise },
  );
});

describe('GET /audit-logs/export?format=json', () => {
  it('is an attachment with the filters and every canonical value of each row, newest first', async () => {
    const reply = await download('format=json', a.orgToken);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(reply.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-logs-\d{8}T\d{6}Z\.json"$/);
    const body = JSON.parse(reply.text);
    expect(Object.keys(body)).toEqual(['exportedAt', 'filters', 'heads', 'publicKey', 'evidence', 'rows']);
    expect(body.filters).toEqual({});
    expect(body.heads).toEqual({ [a.orgId]: { seq: rows[2]!.seq, checksum: rows[2]!.checksum } });
    expect(body.rows.map((row: { id: string }) => row.id)).toEqual([rows[2]!.id, rows[1]!.id, rows[0]!.id]);
    for (const row of body.rows) expect(Object.keys(row)).toEqual(columns);
    expect(body.rows[2]).toMatchObject({
      orgId: a.orgId,
      seq: rows[0]!.seq,
      timestamp: '2026-03-01T10:01:00.000000Z',
      resourceName: 'Lab, "north" wing',
      details: '{"note": "line one\\r\\nline two", "unicode": "Zürich ✓"}',
      prevChecksum: null,
      checksum: rows[0]!.checksum,
    });
  });

  it('verifies offline: each checksum recomputes from the row, and each row links to the one before', async () => {
    const { rows: exported } = JSON.parse((await download('format=json', a.orgToken)).text);
    const inChainOrder = [...exported].sort((x, y) => x.seq - y.seq);
    inChainOrder.forEach((row, i) => {
      expect(auditChecksum(row)).toBe(row.checksum);
      if (i > 0) expect(row.prevChecksum).toBe(inChainOrder[i - 1].checksum);
    });
  });

  it("records each exported organization's chain head as read in the export's snapshot, filtered or not", async () => {
    const reply = await download(`format=json&to=${at(1)}`, a.partnerToken);
    const body = JSON.parse(reply.text);
    expect(body.rows.map((row: { id: string }) => row.id)).toEqual([rows[0]!.id]);
    // The head of the chain, not of the filtered rows; the data.export row written for this export comes after it.
    const { rows: exportedAt } = await t.db.admin.query<{ seq: number; checksum: string }>(
      `SELECT seq, checksum FROM audit_logs WHERE org_id = :orgId::uuid AND seq = (SELECT seq - 1 FROM audit_chain_heads WHERE org_id = :orgId::uuid)`,
      { orgId: a.orgId },
    );
    expect(body.heads).toEqual({ [a.orgId]: exportedAt[0] });
    expect(Object.keys(body.heads)).not.toContain(a2);
  });

  it('applies the filters of the lists and names them', async () => {
    const body = JSON.parse((await download(`action=device.&from=${at(2)}`, a.orgToken)).text);
    expect(body.rows.map((row: { id: string }) => row.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    expect(body.filters).toEqual({ action: 'device.', from: at(2) });
    const searched = JSON.parse((await download('q=hyperlink', a.orgToken)).text);
    expect(searched.rows.map((row: { id: string }) => row.id)).toEqual([rows[1]!.id]);
  });

  it("exports a partner's organizations, never another tenant's", async () => {
    const partner = JSON.parse((await download(`to=${at(10)}`, a.partnerToken)).text);
    expect(new Set(partner.rows.map((row: { orgId: string }) => row.orgId))).toEqual(new Set([a.orgId, a2]));
    expect(JSON.parse((await download(`orgId=${b.orgId}`, a.partnerToken)).text).rows).toEqual([]);
  });

  it('records data.export in the trail of each organization exported, with format, filters and row count', async () => {
    await download(`format=json&to=${at(11)}`, a.partnerToken);
    const { rows: recorded } = await t.db.admin.query(
      `SELECT org_id::text AS "orgId", resource_type AS "resourceType", details FROM audit_logs WHERE action = 'data.export' AND details->'filters'->>'to' = :to::text`,
      { to: at(11) },
    );
    expect(recorded).toHaveLength(2);
    expect(recorded).toContainEqual({
      orgId: a.orgId,
      resourceType: 'audit_log',
      details: {
        format: 'json',
        filters: { to: at(11) },
        rowCount: 3,
        exportRowCount: 4,
        actor: { name: 'Partner User', role: 'partner_admin' },
      },
    });
    expect(recorded).toContainEqual(
      expect.objectContaining({ orgId: a2, details: expect.objectContaining({ rowCount: 1 }) }),
    );
  });
});

describe('GET /audit-logs/export?format=csv', () => {
  it('has a header row and RFC 4180 quoting, and defuses spreadsheet formulas', async () => {
    const reply = await download(`format=csv&to=${at(10)}`, a.orgToken);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(reply.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-logs-\d{8}T\d{6}Z\.csv"$/);
    expect(reply.text.split('\r\n')[0]).toBe(columns.join(','));
    expect(reply.text).toContain(',"Lab, ""north"" wing",');
    expect(reply.text).toContain(`,"'=HYPERLINK(""http://evil.test"")",`);
    expect(reply.text).toContain(",'@admin,");
    const [header, deleted, updated, created] = parseCsv(reply.text);
    expect(header).toEqual(columns);
    expect(deleted![columns.indexOf('actorEmail')]).toBeNull();
    expect(deleted![columns.indexOf('userAgent')]).toBe('');
    expect(deleted![columns.indexOf('resourceName')]).toBe("''quoted");
    expect(updated!.map(unguard)).toEqual(
      expect.arrayContaining(['=HYPERLINK("http://evil.test")', '@admin', '+cmd', '-1\r\nsee log']),
    );
    expect(reply.text).toContain(`,"'-1\r\nsee log",`);
    expect(created![columns.indexOf('details')]).toBe('{"note": "line one\\r\\nline two", "unicode": "Zürich ✓"}');
  });

  it('holds the same values as the JSON export once the guard is undone', async () => {
    const csv = parseCsv((await download(`format=csv&to=${at(10)}`, a.orgToken)).text).slice(1);
    const json = JSON.parse((await download(`format=json&to=${at(10)}`, a.orgToken)).text).rows;
    expect(csv.map((record) => Object.fromEntries(columns.map((column, i) => [column, unguard(record[i]!)])))).toEqual(
      json.map((row: Record<string, unknown>) => ({ ...row, seq: String(row.seq) })),
    );
  });

  it('refuses another format (400)', async () => {
    expect((await download('format=xml', a.orgToken)).status).toBe(400);
  });
});

describe('export limits', () => {
  it('holds the newest 10,000 rows at most, read in pages without gaps or repeats', async () => {
    const reply = await download(`format=json&orgId=${bulk}`, a.partnerToken, { 'accept-encoding': 'gzip' });
    expect(reply.status).toBe(200);
    const seqs = JSON.parse(reply.text).rows.map((row: { seq: number }) => row.seq);
    expect(seqs).toHaveLength(10_000);
    expect(seqs).toEqual(Array.from({ length: 10_000 }, (_, i) => 10_050 - i));
  });

  it('is gzip-compressed when it exceeds 5.5 MiB and the client accepts gzip, else 413', async () => {
    const zipped = await download(`format=csv&orgId=${bulk}`, a.partnerToken, { 'accept-encoding': 'gzip, deflate' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers.get('content-encoding')).toBe('gzip');
    expect(zipped.text.split('\r\n')).toHaveLength(10_002);
    const plain = await download(`format=csv&orgId=${bulk}`, a.partnerToken);
    expect(plain.status).toBe(413);
    expect(JSON.parse(plain.text).error).toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringMatching(/narrow/),
    });
    const refused = await download(`format=csv&orgId=${bulk}`, a.partnerToken, { 'accept-encoding': 'gzip;q=0' });
    expect(refused.status).toBe(413);
  });

  it('answers a small export uncompressed whatever the client accepts', async () => {
    const reply = await download(
      `format=csv&orgId=${bulk}&from=2027-01-01T00:00:01Z&to=2027-01-01T00:00:10Z`,
      a.partnerToken,
      { 'accept-encoding': 'gzip' },
    );
    expect(reply.headers.get('content-encoding')).toBeNull();
    expect(reply.text.split('\r\n')).toHaveLength(12);
  });

  it('is 413 when even the compressed file is too large, and then records no export', async () => {
    const reply = await download(`format=json&orgId=${noise}`, a.partnerToken, { 'accept-encoding': 'gzip' });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.text).error.code).toBe('PAYLOAD_TOO_LARGE');
    const { rows: recorded } = await t.db.admin.query(
      `SELECT 1 FROM audit_logs WHERE action = 'data.export' AND org_id = :orgId::uuid`,
      { orgId: noise },
    );
    expect(recorded).toEqual([]);
  });

  it('needs audit:read (403)', async () => {
    const token = await orgUser(a.partnerId, a.orgId, 'org_viewer', { permissions: ['orgs:read'] });
    expect((await download('format=json', token)).status).toBe(403);
  });
});
