import { describe, expect, it } from 'vitest';
import type { AuditRow } from '#shared/audit/row.ts';
import {
  cefHeader,
  cefValue,
  ocsfClass,
  octetCounted,
  renderRecord,
  type StreamRecord,
  sdValue,
  syslogRecord,
} from '#shared/audit-streams/formats.ts';
import { splitFrames } from '#test/support/siem-receivers.ts';

/** Every character a format gives a meaning to, and a few that break lines or encodings. */
const hostile = 'a"b\\c]d|e=f\ng\rh\r\ni[j] k=\\=|\u2028é🙂';

const row = (overrides: Partial<AuditRow> = {}): AuditRow => ({
  id: '9b0c4c1e-51d6-4f2a-9d43-0c1d3f0e8a11',
  orgId: '4f1c2b7a-8e0d-4c55-b0a2-5e7f9a3c1d20',
  seq: 42,
  timestamp: '2026-11-27T08:15:30.123456Z',
  actorType: 'user',
  actorId: '1d2e3f40-5a6b-4c7d-8e9f-a0b1c2d3e4f5',
  actorEmail: hostile,
  action: 'device.update',
  resourceType: 'device',
  resourceId: '0f9e8d7c-6b5a-4938-8271-605f4e3d2c1b',
  resourceName: hostile,
  details: JSON.stringify({ note: hostile }),
  ipAddress: '203.0.113.7',
  userAgent: hostile,
  result: 'success',
  errorMessage: hostile,
  prevChecksum: 'a'.repeat(64),
  checksum: 'b'.repeat(64),
  ...overrides,
});
const audit = (overrides: Partial<AuditRow> = {}): StreamRecord => ({ type: 'audit', row: row(overrides) });

/** Reads RFC 5424 structured data back: SD-ID, then each PARAM-NAME="PARAM-VALUE" unescaped. */
function parseStructuredData(message: string): Record<string, string> {
  const start = message.indexOf('[');
  const params: Record<string, string> = {};
  let at = message.indexOf(' ', start) + 1;
  while (message[at] !== ']') {
    const eq = message.indexOf('="', at);
    const name = message.slice(at, eq);
    let value = '';
    at = eq + 2;
    while (message[at] !== '"') {
      if (message[at] === '\\' && ['"', '\\', ']'].includes(message[at + 1]!)) at += 1;
      else if (message[at] === ']') throw new Error(`an unescaped ] inside ${name}`);
      value += message[at];
      at += 1;
    }
    params[name] = value;
    at += 1;
    if (message[at] === ' ') at += 1;
  }
  return params;
}

/** Reads a CEF line back: the seven header fields and the extension's key=value pairs, unescaped. */
function parseCef(line: string): { header: string[]; extension: Record<string, string> } {
  const header: string[] = [];
  let field = '';
  let at = 0;
  while (header.length < 7) {
    const c = line[at]!;
    if (c === '\\') {
      field += line[at + 1];
      at += 2;
      continue;
    }
    if (c === '|') {
      header.push(field);
      field = '';
    } else field += c;
    at += 1;
  }
  const extension: Record<string, string> = {};
  const text = line.slice(at);
  // A key is a word followed by an unescaped '='; its value runs up to the next key.
  const keys = [...text.matchAll(/(?:^| )([A-Za-z0-9]+)=/g)].filter((match) => {
    let backslashes = 0;
    for (let i = match.index + match[0].length - 2; text[i] === '\\'; i--) backslashes += 1;
    return backslashes % 2 === 0;
  });
  keys.forEach((match, n) => {
    const from = match.index + match[0].length;
    const to = n + 1 < keys.length ? keys[n + 1]!.index : text.length;
    extension[match[1]!] = text
      .slice(from, to)
      .replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c === 'r' ? '\r' : c));
  });
  return { header, extension };
}

describe('RFC 5424', () => {
  it('escapes ", \\ and ] in structured data, and every value reads back exactly', () => {
    expect(sdValue('a"b\\c]d')).toBe('a\\"b\\\\c\\]d');
    const message = renderRecord(audit(), 'rfc5424');
    expect(
      message.startsWith('<110>1 2026-11-27T08:15:30.123456Z logbook logbook - device.update [logbook@32473 '),
    ).toBe(true);
    const params = parseStructuredData(message);
    expect(params).toEqual(
      expect.objectContaining({
        orgId: row().orgId,
        seq: '42',
        checksum: row().checksum,
        prevChecksum: row().prevChecksum,
        actorEmail: hostile,
        resourceName: hostile,
        category: 'device',
      }),
    );
    // The MSG after the structured data is the row as JSON.
    const msg = message.slice(message.indexOf('] {') + 2);
    expect(JSON.parse(msg)).toEqual(
      expect.objectContaining({ seq: 42, resourceName: hostile, details: row().details }),
    );
  });

  it('keeps the header to printable ASCII and marks failures by severity', () => {
    const message = renderRecord(audit({ action: 'evil action\n<13>1 forged', result: 'failure' }), 'rfc5424');
    expect(message.startsWith('<107>1 2026-11-27T08:15:30.123456Z logbook logbook - evil_action_<13>1_forged [')).toBe(
      true,
    );
    expect(renderRecord(audit({ result: 'denied' }), 'rfc5424').startsWith('<108>')).toBe(true);
  });

  it('frames each message by its length in bytes, so a line break inside a value never splits it', () => {
    const messages = [audit(), audit({ seq: 43 })].map((record) => syslogRecord(record, 'rfc5424'));
    const { frames, rest } = splitFrames(Buffer.from(messages.map(octetCounted).join(''), 'utf8'));
    expect(frames).toEqual(messages);
    expect(rest.length).toBe(0);
    expect(octetCounted('é')).toBe('2 é');
  });

  it('carries the other formats as the MSG of a message without structured data', () => {
    const message = syslogRecord(audit(), 'ndjson');
    expect(message).toMatch(
      /^<110>1 2026-11-27T08:15:30\.123456Z logbook logbook - device\.update - \{"type":"audit",/,
    );
  });
});

describe('CEF', () => {
  it('escapes | and \\ in the header, =, \\ and line breaks in the extension, and reads back exactly', () => {
    expect(cefHeader('a|b\\c\nd')).toBe('a\\|b\\\\c d');
    expect(cefValue('a=b\\c\nd\re')).toBe('a\\=b\\\\c\\nd\\re');
    const line = renderRecord(audit({ action: 'device.update|forged' }), 'cef');
    expect(line).not.toMatch(/[\r\n]/);
    const { header, extension } = parseCef(line);
    expect(header).toEqual(['CEF:0', 'Logbook', 'Logbook', '1', 'device.update|forged', 'device.update|forged', '3']);
    expect(extension).toEqual(
      expect.objectContaining({
        cs1: row().orgId,
        cn1: '42',
        cs2: row().checksum,
        cs3: row().prevChecksum,
        suser: hostile,
        cs5: hostile,
        requestClientApplication: hostile,
        msg: hostile,
        flexString2: row().details,
        rt: String(Date.parse('2026-11-27T08:15:30.123Z')),
      }),
    );
  });
});

describe('OCSF', () => {
  it.each([
    ['user.login', 3002, 1],
    ['user.login.failed', 3002, 1],
    ['user.logout', 3002, 2],
    ['user.permission.change', 3001, 99],
    ['device.create', 6003, 1],
    ['data.export', 6003, 2],
    ['alert.acknowledge', 6003, 3],
    ['device.delete', 6003, 4],
    ['script.execute', 6003, 99],
  ])('classes %s as %i, activity %i, with type_uid = class_uid × 100 + activity_id', (action, classUid, activityId) => {
    expect(ocsfClass(action)).toEqual(expect.objectContaining({ classUid, activityId }));
    const event = JSON.parse(renderRecord(audit({ action }), 'ocsf'));
    expect(event).toEqual(
      expect.objectContaining({
        class_uid: classUid,
        activity_id: activityId,
        type_uid: classUid * 100 + activityId,
        category_uid: Math.floor(classUid / 1000),
        time: Date.parse('2026-11-27T08:15:30.123Z'),
      }),
    );
  });

  it('reports failures and carries the organization, seq, checksum and prevChecksum', () => {
    const event = JSON.parse(renderRecord(audit({ action: 'user.login.failed', result: 'failure' }), 'ocsf'));
    expect(event).toEqual(
      expect.objectContaining({
        status_id: 2,
        status: 'Failure',
        message: hostile,
        metadata: expect.objectContaining({ tenant_uid: row().orgId, sequence: 42, uid: row().id }),
        user: expect.objectContaining({ email_addr: hostile }),
        unmapped: expect.objectContaining({
          orgId: row().orgId,
          seq: 42,
          checksum: row().checksum,
          prevChecksum: row().prevChecksum,
        }),
      }),
    );
  });
});

describe('NDJSON and anchors', () => {
  it('writes one line per record whatever the values hold', () => {
    const line = renderRecord(audit(), 'ndjson');
    expect(line).not.toMatch(/[\n\r]/);
    expect(JSON.parse(line)).toEqual({ type: 'audit', ...row(), category: 'device' });
    // Written without copying the row, the text is still the object's: type first, the row's order, category last.
    expect(line).toBe(JSON.stringify({ type: 'audit', ...row(), category: 'device' }));
  });

  it('renders an anchor event in every format', () => {
    const anchor: StreamRecord = {
      type: 'anchor',
      orgId: row().orgId,
      seq: 42,
      checksum: row().checksum,
      keyId: '0123456789abcdef',
      signature: 'c2lnbmF0dXJl+/==',
      at: '2026-11-27T09:00:00.000Z',
    };
    expect(JSON.parse(renderRecord(anchor, 'ndjson'))).toEqual(anchor);
    expect(parseStructuredData(renderRecord(anchor, 'rfc5424'))).toEqual(
      expect.objectContaining({ type: 'anchor', seq: '42', signature: 'c2lnbmF0dXJl+/==' }),
    );
    expect(parseCef(renderRecord(anchor, 'cef')).extension).toEqual(
      expect.objectContaining({ cn1: '42', cs4: 'c2lnbmF0dXJl+/==' }),
    );
    expect(JSON.parse(renderRecord(anchor, 'ocsf')).unmapped).toEqual(anchor);
  });
});

describe('device events and diagnostic log entries', () => {
  const times = { timestamp: '2026-11-27T08:15:30.123456Z', storedAt: '2026-11-27T08:15:31.000000Z' };
  const device = { orgId: row().orgId, deviceId: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d' };
  const event: StreamRecord = {
    type: 'device-event',
    id: '5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b',
    ...device,
    hostname: hostile,
    seq: 7,
    ...times,
    level: 'error',
    category: 'security',
    source: hostile,
    eventId: '4625',
    message: hostile,
    details: { note: hostile },
  };
  const entry: StreamRecord = {
    type: 'agent-log',
    id: '6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c',
    ...device,
    hostname: null,
    seq: 3,
    ...times,
    level: 'debug',
    component: hostile,
    message: hostile,
    fields: { attempt: 1 },
    agentVersion: '2.4.1',
  };

  it('RFC 5424: the entry in structured data, escaped, with its organization, device and key; severity by level', () => {
    const message = renderRecord(event, 'rfc5424');
    // Facility 4 (security) for a security event, severity 3 (error).
    expect(message.startsWith('<35>1 2026-11-27T08:15:30.123456Z logbook logbook - device-event [logbook@32473 ')).toBe(
      true,
    );
    expect(parseStructuredData(message)).toEqual(
      expect.objectContaining({
        type: 'device-event',
        orgId: row().orgId,
        deviceId: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
        hostname: hostile,
        seq: '7',
        source: hostile,
        eventId: '4625',
      }),
    );
    expect(renderRecord(entry, 'rfc5424').startsWith('<15>1 ')).toBe(true);
    const { frames } = splitFrames(Buffer.from(octetCounted(syslogRecord(entry, 'cef')), 'utf8'));
    expect(frames).toHaveLength(1);
  });

  it('CEF: header and extension escaped, reading back exactly', () => {
    const line = renderRecord(event, 'cef');
    expect(line).not.toMatch(/[\r\n]/);
    const { header, extension } = parseCef(line);
    expect(header[4]).toBe(`${hostile.replace(/\r\n|[\r\n]/g, ' ')}:4625`);
    expect(header[6]).toBe('7');
    expect(extension).toEqual(
      expect.objectContaining({ cs1: row().orgId, cn1: '7', dvchost: hostile, msg: hostile, cs4: hostile }),
    );
    expect(parseCef(renderRecord(entry, 'cef')).extension).toEqual(
      expect.objectContaining({ cn1: '3', cs5: hostile, cs2: 'agent-logs' }),
    );
  });

  it('OCSF: a Base Event (class 0, Other) with its device, severity and the entry unmapped; NDJSON: the entry itself', () => {
    const ocsf = JSON.parse(renderRecord(event, 'ocsf'));
    expect(ocsf).toEqual(
      expect.objectContaining({
        class_uid: 0,
        activity_id: 99,
        type_uid: 99,
        severity_id: 4,
        message: hostile,
        device: expect.objectContaining({ uid: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d', hostname: hostile }),
        metadata: expect.objectContaining({ tenant_uid: row().orgId, sequence: 7, log_name: 'device-events' }),
        unmapped: event,
      }),
    );
    expect(JSON.parse(renderRecord(entry, 'ocsf')).metadata.log_name).toBe('agent-logs');
    expect(JSON.parse(renderRecord(entry, 'ndjson'))).toEqual(entry);
  });
});
