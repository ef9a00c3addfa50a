/**
 * The formats a destination receives its records in (docs/audit-streaming.md "Formats"): RFC 5424 syslog with the
 * row in structured data, ArcSight CEF, OCSF 1.1 JSON and the plain audit row as JSON. Every record carries the
 * organization, seq, checksum and prevChecksum, so a receiver can check order and completeness itself. Every value
 * a tenant or a caller controls is escaped as its format requires: nothing it holds can end a field, a header or a line.
 */
import { auditCategoryOf } from '../audit/categories.ts';
import type { AuditRow } from '../audit/row.ts';

export const streamFormats = ['rfc5424', 'cef', 'ocsf', 'ndjson'] as const;
export type StreamFormat = (typeof streamFormats)[number];

/** A signed anchor of an organization's chain, as streams carry it. */
export type AnchorEvent = {
  type: 'anchor';
  orgId: string;
  seq: number;
  checksum: string;
  keyId: string;
  signature: string;
  at: string;
};

/** What every streamed log entry carries: its organization, device, ordering key (`seq`) and times. */
type LogRecordBase = {
  id: string;
  orgId: string;
  deviceId: string;
  hostname: string | null;
  /** The stream's ordering key in the organization (increasing, not gapless). */
  seq: number;
  /** When the device says it happened (canonical, microseconds, UTC). */
  timestamp: string;
  /** When the service stored it. */
  storedAt: string;
  message: string;
};

/** A device event log entry (the device-events stream). */
export type DeviceEventRecord = LogRecordBase & {
  type: 'device-event';
  level: 'info' | 'warning' | 'error' | 'critical';
  category: 'security' | 'hardware' | 'application' | 'system';
  source: string;
  eventId: string | null;
  details: Record<string, unknown>;
};

/** An agent diagnostic log entry (the agent-logs stream). */
export type AgentLogRecord = LogRecordBase & {
  type: 'agent-log';
  level: 'debug' | 'info' | 'warn' | 'error';
  component: string;
  fields: Record<string, unknown>;
  agentVersion: string | null;
};

export type LogRecord = DeviceEventRecord | AgentLogRecord;
export type StreamRecord = { type: 'audit'; row: AuditRow } | AnchorEvent | LogRecord;

/** The record as plain JSON: the audit row as an export holds it (details as its jsonb text), with its category. */
export function recordJson(record: StreamRecord, category?: string): Record<string, unknown> {
  if (record.type !== 'audit') return { ...record };
  return { type: 'audit', ...record.row, category: category ?? auditCategoryOf(record.row.action) };
}

/**
 * `JSON.stringify(recordJson(record))` of an audit row, without copying the row into a new object first: the same
 * text (`type` first, the row's fields in their order, `category` last), for the hot path of a page.
 */
export function auditRowJson(row: AuditRow, category: string): string {
  const fields = JSON.stringify(row);
  return `{"type":"audit",${fields.length > 2 ? `${fields.slice(1, -1)},` : ''}"category":${JSON.stringify(category)}}`;
}

/** The record's organization, ordering key and time (the audit row's, the anchor's, the log entry's own). */
export const recordOrg = (record: StreamRecord) => (record.type === 'audit' ? record.row.orgId : record.orgId);
export const recordSeq = (record: StreamRecord) => (record.type === 'audit' ? record.row.seq : record.seq);
export const recordTime = (record: StreamRecord) =>
  record.type === 'audit' ? record.row.timestamp : record.type === 'anchor' ? record.at : record.timestamp;

/** Milliseconds since the epoch of a canonical timestamp (microseconds, UTC). */
const epochMs = (timestamp: string) => Date.parse(timestamp);

// ---------------------------------------------------------------------------------------------------------------
// RFC 5424

/** The structured-data id of the records: `logbook` under the documentation enterprise number of RFC 5612. */
export const sdId = 'logbook@32473';

/** Audit rows and anchors: facility 13 (log audit); severity informational for success, warning for denied, error for failure. */
const auditPriority = (result: string | undefined) => 13 * 8 + (result === 'failure' ? 3 : result === 'denied' ? 4 : 6);

/** RFC 5424 severities of the log levels. */
const levelSeverities: Record<LogRecord['level'], number> = {
  debug: 7,
  info: 6,
  warn: 4,
  warning: 4,
  error: 3,
  critical: 2,
};

/** Log entries: facility 4 (security/authorization) for security events, else 1 (user-level); severity by level. */
const logPriority = (record: LogRecord) =>
  (record.type === 'device-event' && record.category === 'security' ? 4 : 1) * 8 + levelSeverities[record.level];

const sdSpecial = /["\\\]]/;
const sdSpecials = /["\\\]]/g;

/** A PARAM-VALUE: `"`, `\` and `]` escaped with a backslash (RFC 5424 section 6.3.3). */
export const sdValue = (value: string) => (sdSpecial.test(value) ? value.replace(sdSpecials, (c) => `\\${c}`) : value);

const notPrintable = /[^\x21-\x7e]/;
const notPrintables = /[^\x21-\x7e]/g;

/** A header field (MSGID, at most 32 printable US-ASCII characters): anything else becomes `_`; empty is `-`. */
const headerToken = (value: string, max: number) =>
  (notPrintable.test(value) ? value.replace(notPrintables, '_') : value).slice(0, max) || '-';

/** An RFC 5424 message: its header, structured data (`-`: none) and MSG. */
export function syslogMessage(
  parts: { result?: string; priority?: number; timestamp: string; msgId: string; sd: string | null },
  msg: string,
): string {
  const priority = parts.priority ?? auditPriority(parts.result);
  const header = `<${priority}>1 ${parts.timestamp} logbook logbook - ${headerToken(parts.msgId, 32)}`;
  return `${header} ${parts.sd ?? '-'} ${msg}`;
}

/** One SD-PARAM with its leading space (` name="value"`, the value escaped); nothing for a null value. */
const sdParam = (name: string, value: string | number | null | undefined) =>
  value === null || value === undefined ? '' : ` ${name}="${typeof value === 'number' ? value : sdValue(value)}"`;

function structuredData(values: Record<string, string | number | null>): string {
  let params = '';
  for (const name in values) {
    const value = values[name];
    if (value === null || value === undefined) continue;
    params += `${params ? ' ' : ''}${name}="${sdValue(String(value))}"`;
  }
  return `[${sdId} ${params}]`;
}

/** The structured data of a log entry: every field but its free-form details, fields and message. */
function logStructuredData(record: LogRecord): string {
  const common = {
    type: record.type,
    id: record.id,
    orgId: record.orgId,
    deviceId: record.deviceId,
    hostname: record.hostname,
    seq: record.seq,
    timestamp: record.timestamp,
    storedAt: record.storedAt,
    level: record.level,
  };
  return structuredData(
    record.type === 'device-event'
      ? { ...common, category: record.category, source: record.source, eventId: record.eventId }
      : { ...common, component: record.component, agentVersion: record.agentVersion },
  );
}

function rfc5424(record: StreamRecord): string {
  if (record.type === 'device-event' || record.type === 'agent-log')
    return syslogMessage(
      { priority: logPriority(record), timestamp: record.timestamp, msgId: record.type, sd: logStructuredData(record) },
      JSON.stringify(recordJson(record)),
    );
  if (record.type === 'anchor') {
    const { type, ...anchor } = record;
    return syslogMessage(
      { timestamp: record.at, msgId: 'anchor', sd: structuredData({ type, ...anchor }) },
      JSON.stringify(recordJson(record)),
    );
  }
  // The audit row, a page's thousands of them: its structured data written straight into one string.
  const row = record.row;
  const category = auditCategoryOf(row.action);
  const sd =
    `[${sdId} type="audit"${sdParam('id', row.id)}${sdParam('orgId', row.orgId)}${sdParam('seq', row.seq)}` +
    `${sdParam('checksum', row.checksum)}${sdParam('prevChecksum', row.prevChecksum)}` +
    `${sdParam('timestamp', row.timestamp)}${sdParam('actorType', row.actorType)}${sdParam('actorId', row.actorId)}` +
    `${sdParam('actorEmail', row.actorEmail)}${sdParam('action', row.action)}${sdParam('category', category)}` +
    `${sdParam('resourceType', row.resourceType)}${sdParam('resourceId', row.resourceId)}` +
    `${sdParam('resourceName', row.resourceName)}${sdParam('ipAddress', row.ipAddress)}${sdParam('result', row.result)}]`;
  return syslogMessage(
    { result: row.result, timestamp: row.timestamp, msgId: row.action, sd },
    auditRowJson(row, category),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// CEF

/** A CEF header field: `\` and `|` escaped; a line break (not allowed in the header) becomes a space. */
export const cefHeader = (value: string) => value.replace(/[\\|]/g, (c) => `\\${c}`).replace(/\r\n|[\r\n]/g, ' ');

/** A CEF extension value: `\` and `=` escaped, line breaks written as `\n` and `\r`. */
export const cefValue = (value: string) =>
  value
    .replace(/[\\=]/g, (c) => `\\${c}`)
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r');

const cefSeverity = (result: string) => (result === 'success' ? 3 : result === 'denied' ? 7 : 6);

function cefLine(signatureId: string, name: string, severity: number, extension: [string, unknown][]): string {
  const header = ['CEF:0', 'Logbook', 'Logbook', '1', signatureId, name, String(severity)].map((field, n) =>
    n === 0 ? field : cefHeader(field),
  );
  const ext = extension
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([key, value]) => `${key}=${cefValue(String(value))}`)
    .join(' ');
  return `${header.join('|')}|${ext}`;
}

/** CEF severities (0 to 10) of the log levels. */
const cefLevelSeverities: Record<LogRecord['level'], number> = {
  debug: 1,
  info: 3,
  warn: 5,
  warning: 5,
  error: 7,
  critical: 9,
};

function cefLog(record: LogRecord): string {
  const device = record.type === 'device-event';
  // Signature: the event's source and id (a device event), or the component (a diagnostic entry).
  const signatureId = device ? `${record.source}:${record.eventId ?? '-'}` : `agent:${record.component}`;
  return cefLine(signatureId, record.message.slice(0, 512), cefLevelSeverities[record.level], [
    ['rt', epochMs(record.timestamp)],
    ['externalId', record.id],
    ['cat', device ? record.category : record.component],
    ['dvchost', record.hostname],
    ['deviceExternalId', record.deviceId],
    ['msg', record.message],
    ['cs1Label', 'orgId'],
    ['cs1', record.orgId],
    ['cn1Label', 'seq'],
    ['cn1', record.seq],
    ['cs2Label', 'stream'],
    ['cs2', device ? 'device-events' : 'agent-logs'],
    ['cs3Label', 'level'],
    ['cs3', record.level],
    ['cs4Label', device ? 'source' : 'agentVersion'],
    ['cs4', device ? record.source : record.agentVersion],
    ['cs5Label', device ? 'eventId' : 'component'],
    ['cs5', device ? record.eventId : record.component],
    ['flexString2Label', device ? 'details' : 'fields'],
    ['flexString2', JSON.stringify(device ? record.details : record.fields)],
  ]);
}

function cef(record: StreamRecord): string {
  if (record.type === 'device-event' || record.type === 'agent-log') return cefLog(record);
  if (record.type === 'anchor')
    return cefLine('anchor', 'Audit chain anchor', 1, [
      ['rt', epochMs(record.at)],
      ['cs1Label', 'orgId'],
      ['cs1', record.orgId],
      ['cn1Label', 'seq'],
      ['cn1', record.seq],
      ['cs2Label', 'checksum'],
      ['cs2', record.checksum],
      ['cs3Label', 'keyId'],
      ['cs3', record.keyId],
      ['cs4Label', 'signature'],
      ['cs4', record.signature],
    ]);
  const row = record.row;
  return cefLine(row.action, row.action, cefSeverity(row.result), [
    ['rt', epochMs(row.timestamp)],
    ['externalId', row.id],
    ['act', row.action],
    ['cat', auditCategoryOf(row.action)],
    ['outcome', row.result],
    ['suid', row.actorId],
    ['suser', row.actorEmail],
    ['src', row.ipAddress],
    ['requestClientApplication', row.userAgent],
    ['msg', row.errorMessage],
    ['cs1Label', 'orgId'],
    ['cs1', row.orgId],
    ['cn1Label', 'seq'],
    ['cn1', row.seq],
    ['cs2Label', 'checksum'],
    ['cs2', row.checksum],
    ['cs3Label', 'prevChecksum'],
    ['cs3', row.prevChecksum],
    ['cs4Label', 'resourceType'],
    ['cs4', row.resourceType],
    ['cs5Label', 'resourceName'],
    ['cs5', row.resourceName],
    ['cs6Label', 'resourceId'],
    ['cs6', row.resourceId],
    ['flexString1Label', 'actorType'],
    ['flexString1', row.actorType],
    ['flexString2Label', 'details'],
    ['flexString2', row.details],
  ]);
}

// ---------------------------------------------------------------------------------------------------------------
// OCSF 1.1

/** API Activity's activities by the action's verb (its last segment): 1 create, 2 read, 3 update, 4 delete. */
const verbActivities: [number, string, readonly string[]][] = [
  [1, 'Create', ['create', 'add', 'import', 'enroll', 'submit', 'register', 'upload', 'raise', 'generate']],
  [2, 'Read', ['read', 'access', 'export', 'list', 'view', 'get', 'search', 'download', 'query']],
  [
    3,
    'Update',
    ['update', 'change', 'edit', 'acknowledge', 'resolve', 'rotate', 'assign', 'set', 'rename', 'replay', 'restore'],
  ],
  [4, 'Delete', ['delete', 'remove', 'purge', 'revoke', 'prune']],
];

/** The OCSF class and activity of an action: Authentication, Account Change, else API Activity. */
export function ocsfClass(action: string): {
  classUid: number;
  className: string;
  activityId: number;
  activity: string;
} {
  if (action === 'user.login' || action.startsWith('user.login.'))
    return { classUid: 3002, className: 'Authentication', activityId: 1, activity: 'Logon' };
  if (action === 'user.logout')
    return { classUid: 3002, className: 'Authentication', activityId: 2, activity: 'Logoff' };
  if (action.startsWith('user.permission'))
    return { classUid: 3001, className: 'Account Change', activityId: 99, activity: 'Other' };
  const verb = action.split('.').at(-1) ?? '';
  const found = verbActivities.find(([, , verbs]) => verbs.includes(verb));
  return {
    classUid: 6003,
    className: 'API Activity',
    activityId: found?.[0] ?? 99,
    activity: found?.[1] ?? 'Other',
  };
}

const ocsfCategories: Record<number, string> = {
  0: 'Uncategorized',
  3: 'Identity & Access Management',
  6: 'Application Activity',
};

const ocsfMetadata = (uid: string, orgId: string, seq: number) => ({
  version: '1.1.0',
  product: { name: 'Logbook', vendor_name: 'Logbook' },
  log_name: 'audit',
  uid,
  tenant_uid: orgId,
  sequence: seq,
});

/** What no 1.x class describes (an anchor, a log entry): a Base Event, category Uncategorized, activity Other. */
const ocsfBaseEvent = {
  class_uid: 0,
  class_name: 'Base Event',
  category_uid: 0,
  category_name: ocsfCategories[0],
  activity_id: 99,
  activity_name: 'Other',
  type_uid: 99,
  type_name: 'Base Event: Other',
};

/** OCSF severity ids of the log levels: 1 informational, 2 low, 3 medium, 4 high, 5 critical. */
const ocsfLevelSeverities: Record<LogRecord['level'], [number, string]> = {
  debug: [1, 'Informational'],
  info: [1, 'Informational'],
  warn: [3, 'Medium'],
  warning: [3, 'Medium'],
  error: [4, 'High'],
  critical: [5, 'Critical'],
};

/**
 * A log entry as an OCSF Base Event (class 0, activity 99 Other): no 1.x class describes a relayed OS event or an
 * agent's own diagnostic line (Event Log Activity, 1008, reports actions on the logging service itself, such as a
 * cleared log), so the entry keeps the base class with its device, message and severity, and its own fields unmapped.
 */
function ocsfLog(record: LogRecord): Record<string, unknown> {
  const [severityId, severity] = ocsfLevelSeverities[record.level];
  const stream = record.type === 'device-event' ? 'device-events' : 'agent-logs';
  return {
    ...ocsfBaseEvent,
    time: epochMs(record.timestamp),
    severity_id: severityId,
    severity,
    message: record.message,
    metadata: { ...ocsfMetadata(record.id, record.orgId, record.seq), log_name: stream },
    device: { uid: record.deviceId, ...(record.hostname !== null && { hostname: record.hostname }), type_id: 0 },
    unmapped: recordJson(record),
  };
}

function ocsf(record: StreamRecord): Record<string, unknown> {
  if (record.type === 'device-event' || record.type === 'agent-log') return ocsfLog(record);
  if (record.type === 'anchor')
    return {
      ...ocsfBaseEvent,
      time: epochMs(record.at),
      severity_id: 1,
      severity: 'Informational',
      message: 'Audit chain anchor',
      metadata: ocsfMetadata(`anchor:${record.orgId}:${record.seq}`, record.orgId, record.seq),
      unmapped: { ...record },
    };
  const row = record.row;
  const kind = ocsfClass(row.action);
  const categoryUid = Math.floor(kind.classUid / 1000);
  const failed = row.result !== 'success';
  const user = { uid: row.actorId, email_addr: row.actorEmail ?? undefined, type: row.actorType };
  return {
    class_uid: kind.classUid,
    class_name: kind.className,
    category_uid: categoryUid,
    category_name: ocsfCategories[categoryUid],
    activity_id: kind.activityId,
    activity_name: kind.activity,
    type_uid: kind.classUid * 100 + kind.activityId,
    type_name: `${kind.className}: ${kind.activity}`,
    time: epochMs(row.timestamp),
    severity_id: failed ? 3 : 1,
    severity: failed ? 'Medium' : 'Informational',
    status_id: failed ? 2 : 1,
    status: failed ? 'Failure' : 'Success',
    ...(row.result === 'denied' && { status_detail: 'denied' }),
    ...(row.errorMessage !== null && { message: row.errorMessage }),
    metadata: ocsfMetadata(row.id, row.orgId, row.seq),
    actor: { user },
    ...(kind.classUid !== 6003 && { user }),
    ...(kind.classUid === 6003 && {
      api: { operation: row.action },
      resources:
        row.resourceType === null ? [] : [{ type: row.resourceType, uid: row.resourceId, name: row.resourceName }],
    }),
    ...(row.ipAddress !== null && { src_endpoint: { ip: row.ipAddress } }),
    ...(row.userAgent !== null && { http_request: { user_agent: row.userAgent } }),
    unmapped: recordJson(record),
  };
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * The record in a format, as one line: RFC 5424 and CEF as their text (a line break in a value is escaped, or
 * inside a syslog structured-data value framed by its length), OCSF and NDJSON as compact JSON.
 */
export function renderRecord(record: StreamRecord, format: StreamFormat): string {
  switch (format) {
    case 'rfc5424':
      return rfc5424(record);
    case 'cef':
      return cef(record);
    case 'ocsf':
      return JSON.stringify(ocsf(record));
    case 'ndjson':
      return record.type === 'audit'
        ? auditRowJson(record.row, auditCategoryOf(record.row.action))
        : JSON.stringify(recordJson(record));
  }
}

/** Whether the format renders JSON (an object per record) rather than a text line. */
export const jsonFormat = (format: StreamFormat) => format === 'ocsf' || format === 'ndjson';

/**
 * The record as a syslog message: an RFC 5424 record is one already; any other format is the MSG of an RFC 5424
 * message without structured data.
 */
export function syslogRecord(record: StreamRecord, format: StreamFormat): string {
  const rendered = renderRecord(record, format);
  if (format === 'rfc5424') return rendered;
  if (record.type === 'device-event' || record.type === 'agent-log')
    return syslogMessage(
      { priority: logPriority(record), timestamp: record.timestamp, msgId: record.type, sd: null },
      rendered,
    );
  const audit = record.type === 'audit' ? record.row : undefined;
  return syslogMessage(
    {
      result: audit?.result,
      timestamp: recordTime(record),
      msgId: audit?.action ?? 'anchor',
      sd: null,
    },
    rendered,
  );
}

/** Octet-counting framing (RFC 6587 section 3.4.1, RFC 5425): the message's length in bytes, a space, the message. */
export const octetCounted = (message: string) => `${Buffer.byteLength(message, 'utf8')} ${message}`;
