import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { auditChecksum, type CanonicalAuditRow, canonicalPayload } from '#shared/audit/canonical.ts';
import { appendAudit, appendOne, readChain, useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();

const example: CanonicalAuditRow = {
  id: '8f14e45f-ceea-467f-a0b6-3c1f8e4b2a10',
  orgId: '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
  seq: 2,
  timestamp: '2024-02-29T23:59:59.123456Z',
  actorType: 'user',
  actorId: 'c9bf9e57-1685-4c89-bafb-ff5af830be8a',
  actorEmail: 'jörg@exämple.de',
  action: 'device.update',
  resourceType: null,
  resourceId: null,
  resourceName: null,
  details: '{"a": 1}',
  ipAddress: null,
  userAgent: null,
  result: 'success',
  errorMessage: null,
  prevChecksum: 'ab',
};

describe('the canonical payload v1', () => {
  it('is the version line, then one line per field in the documented order: ~ for null, else UTF-8 byte length and value', () => {
    expect(canonicalPayload(example)).toBe(
      [
        'logbook-audit-v1',
        '36:8f14e45f-ceea-467f-a0b6-3c1f8e4b2a10',
        '36:1b4e28ba-2fa1-41d2-883f-0016d3cca427',
        '1:2',
        '27:2024-02-29T23:59:59.123456Z',
        '4:user',
        '36:c9bf9e57-1685-4c89-bafb-ff5af830be8a',
        '17:jörg@exämple.de',
        '13:device.update',
        '~',
        '~',
        '~',
        '8:{"a": 1}',
        '~',
        '~',
        '7:success',
        '~',
        '2:ab',
      ].join('\n'),
    );
  });

  it('tells an empty value from a null one and a value containing a newline from two fields', () => {
    expect(canonicalPayload({ ...example, actorEmail: '' })).toContain('\n0:\n');
    const shifted = { ...example, resourceName: 'a\n~', ipAddress: null };
    const plain = { ...example, resourceName: 'a', ipAddress: '~' };
    expect(canonicalPayload(shifted)).not.toBe(canonicalPayload(plain));
  });

  it('has the lowercase hex SHA-256 of its UTF-8 bytes as checksum', () => {
    const expected = createHash('sha256')
      .update(Buffer.from(canonicalPayload(example), 'utf8'))
      .digest('hex');
    expect(auditChecksum(example)).toBe(expected);
    expect(auditChecksum(example)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('the checksum the database seals', () => {
  it('is the one computed here from the row values, for tricky values', async () => {
    const orgId = randomUUID();
    await appendAudit(t.app, [
      {
        orgId,
        actorEmail: 'jörg.müller@exämple.de',
        resourceName: '🛡️ Ｓｅｒｖｅｒ «prod»',
        details: {
          z: [1, 2.5, { ä: 'line\nbreak "quoted" \\ tab\t' }],
          a: null,
          nested: { deep: { deeper: [true, false, 1e21] } },
        },
        ipAddress: '2001:0db8:85a3:0000:0000:8a2e:0370:7334:abcd',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64) «quoted»\u0001',
        result: 'failure',
        errorMessage: 'Zugriff verweigert: ß',
        timestamp: '2024-03-01T00:59:59.123456+01:00',
      },
      {
        orgId,
        actorEmail: null,
        resourceType: null,
        resourceId: null,
        resourceName: null,
        ipAddress: null,
        userAgent: null,
        result: 'denied',
      },
      { orgId, timestamp: '1970-01-01T00:00:00.000001Z', actorType: 'ai_agent', details: {} },
      { orgId, timestamp: '9999-12-31T23:59:59.999999Z', actorType: 'system', actorEmail: '' },
    ]);
    const chain = await readChain(t.app, orgId);
    expect(chain.map((row) => row.timestamp)).toEqual([
      '2024-02-29T23:59:59.123456Z',
      expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      '1970-01-01T00:00:00.000001Z',
      '9999-12-31T23:59:59.999999Z',
    ]);
    for (const row of chain) expect(auditChecksum(row)).toBe(row.checksum);
  });

  it('seals one statement of two organizations, rows interleaved, each chain as its canonical payloads give it', async () => {
    const [a, b] = [randomUUID(), randomUUID()].sort();
    const rows = Array.from({ length: 6 }, (_, i) => ({
      orgId: i % 2 === 0 ? b! : a!,
      actorEmail: i === 3 ? null : `tech${i}@exämple.de`,
      resourceName: i === 4 ? '' : `WS-${i} «prod»`,
      details: { n: i, text: 'line\nbreak "quoted" \\ ß', nested: { list: [i, null, true] } },
      ipAddress: i === 1 ? null : '203.0.113.7',
      timestamp: `2024-0${1 + i}-15T12:00:00.00000${i}Z`,
    }));
    await appendAudit(t.app, rows);
    for (const orgId of [a!, b!]) {
      const chain = await readChain(t.app, orgId);
      expect(chain.map((row) => row.seq)).toEqual([1, 2, 3]);
      // In the order the statement sent them: within an organization, seq follows insertion.
      expect(chain.map((row) => (JSON.parse(row.details) as { n: number }).n)).toEqual(
        orgId === b ? [0, 2, 4] : [1, 3, 5],
      );
      expect(chain[0]!.prevChecksum).toBeNull();
      for (const [i, row] of chain.entries()) {
        expect(auditChecksum(row)).toBe(row.checksum);
        if (i > 0) expect(row.prevChecksum).toBe(chain[i - 1]!.checksum);
      }
    }
  });

  it('does not depend on the session time zone of the writer', async () => {
    const orgId = randomUUID();
    await t.app.transaction(async (tx) => {
      await tx.query(`SET LOCAL TimeZone = 'Pacific/Chatham'`);
      await appendOne(tx, { orgId, timestamp: '2024-06-30T23:30:00.5+12:45' });
    });
    const [row] = await readChain(t.app, orgId);
    expect(row!.timestamp).toBe('2024-06-30T10:45:00.500000Z');
    expect(auditChecksum(row!)).toBe(row!.checksum);
  });
});
