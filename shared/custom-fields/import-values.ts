import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db, Tx } from '../db/db.ts';
import { Conflict, NotFound, ValidationFailed } from '../errors.ts';
import { reportedSerial } from '../hierarchy/serial-number.ts';
import { looseName } from '../imports/csv.ts';
import { plannedOutcome, rowNumberOf } from '../imports/rows.ts';
import type { Annotation } from '../imports/schemas.ts';
import { importPartner, importRecords } from './import-source.ts';
import {
  maxImportRows,
  type ValueStatus,
  type valuesImportReply,
  type valuesImport as valuesImportSchema,
} from './schemas.ts';
import type { DefinitionRecord, ValueTarget } from './store.ts';
import * as store from './store.ts';
import { readValue, sameValue } from './value.ts';
import { appliesTo, tellValuesChanged, type ValueChange, valueChangeEvents } from './values.ts';

type Input = z.output<typeof valuesImportSchema>;
type Reply = z.output<typeof valuesImportReply>;
type Row = Reply['rows'][number];
type Role = NonNullable<Reply['columns'][string]>;
type Device = ValueTarget & { serialNumber: string | null };

/** Values written per transaction at commit: each chunk stands alone, so an interrupted commit keeps what it wrote. */
const chunkValues = 5000;

/** Headers that name a device column by themselves (case, spaces, - and _ ignored), as the presets' exports write them. */
const deviceColumns: Record<string, Role> = {
  hostname: 'hostname',
  devicehostname: 'hostname',
  devicename: 'hostname',
  computername: 'hostname',
  systemname: 'hostname',
  serialnumber: 'serialNumber',
  serial: 'serialNumber',
  biosserialnumber: 'serialNumber',
  deviceexternalid: 'deviceExternalId',
  deviceuid: 'deviceExternalId',
  deviceid: 'deviceExternalId',
  computerid: 'deviceExternalId',
};

/** How each column is read: the caller's mapping, else a device column's name, a definition's key, name or externalId. */
function columnRoles(header: string[], input: Input, definitions: DefinitionRecord[]): Reply['columns'] {
  if (input.mapping) return Object.fromEntries(header.map((column) => [column, input.mapping![column] ?? null]));
  return Object.fromEntries(
    header.map((column) => {
      const loose = looseName(column);
      const device = deviceColumns[loose];
      if (device) return [column, device];
      const field =
        definitions.find((d) => d.key === column) ??
        definitions.find(
          (d) => d.sourceSystem === input.sourceSystem && d.externalId?.toLowerCase() === column.toLowerCase(),
        ) ??
        definitions.find((d) => looseName(d.name) === loose);
      return [column, field ? (`field:${field.key}` as Role) : null];
    }),
  );
}

const cellText = (cell: unknown) => (cell === null || cell === undefined ? '' : String(cell).trim());
const digestOf = (row: Pick<Row, 'deviceId' | 'fields'> & { match: string }) =>
  createHash('sha256')
    .update(
      JSON.stringify([
        row.deviceId,
        row.match,
        // A value already stored reads as set: a resumed commit finds its own earlier writes unchanged.
        row.fields.map((f) => [f.key, f.status === 'unchanged' ? 'set' : f.status, f.value]),
      ]),
    )
    .digest('hex')
    .slice(0, 16);

/**
 * Finds a row's device among those in scope: the other RMM's device id mapped by an earlier import, else the serial
 * number (placeholders and blanks ignored), else the hostname ignoring case; two devices matching is ambiguous.
 */
function deviceResolver(
  inScope: Device[],
  mappings: { externalId: string; deviceId: string }[],
  columns: { hostColumn?: string; serialColumn?: string; idColumn?: string },
) {
  const byId = new Map(inScope.map((device) => [device.id, device]));
  const index = (key: (device: Device) => string | null) => {
    const map = new Map<string, Device[]>();
    for (const device of inScope) {
      const k = key(device);
      if (k) map.set(k, [...(map.get(k) ?? []), device]);
    }
    return map;
  };
  const bySerial = index((device) => device.serialNumber?.toLowerCase() ?? null);
  const byHostname = index((device) => device.hostname.toLowerCase());
  const mapped = new Map(mappings.map((m) => [m.externalId, m.deviceId]));
  const { hostColumn, serialColumn, idColumn } = columns;
  return (record: Record<string, unknown>) => {
    const externalId = idColumn ? cellText(record[idColumn]) : '';
    const mappedDevice = externalId ? byId.get(mapped.get(externalId) ?? '') : undefined;
    if (mappedDevice) return { device: mappedDevice, by: 'deviceExternalId' as const, externalId };
    const serial = serialColumn ? reportedSerial(cellText(record[serialColumn])) : null;
    const serialMatches = serial ? (bySerial.get(serial.toLowerCase()) ?? []) : [];
    if (serialMatches.length > 1) return { ambiguous: `${serialMatches.length} devices have serial number ${serial}` };
    if (serialMatches.length === 1) return { device: serialMatches[0]!, by: 'serialNumber' as const, externalId };
    const hostname = hostColumn ? cellText(record[hostColumn]) : '';
    const hostMatches = hostname ? (byHostname.get(hostname.toLowerCase()) ?? []) : [];
    if (hostMatches.length > 1) return { ambiguous: `${hostMatches.length} devices are named ${hostname}` };
    if (hostMatches.length === 1) return { device: hostMatches[0]!, by: 'hostname' as const, externalId };
    return {
      missing: `No enrolled device matches ${[externalId && `id ${externalId}`, serial && `serial ${serial}`, hostname && `hostname ${hostname}`].filter(Boolean).join(', ') || 'this row (no device column)'}`,
    };
  };
}

/** How a row found its device: one device, none, or more than one (never a guess); or changed since preview. */
type Match = 'resolved' | 'no-device' | 'ambiguous' | 'changed';

/** A resolved row updates when it sets a value; else it is invalid when a value does not check; else unchanged. */
function annotationOf(fields: Row['fields']): Annotation {
  if (fields.some((field) => field.status === 'set')) return 'update';
  if (fields.some((field) => field.status === 'invalid' || field.status === 'no-definition')) return 'invalid';
  return 'unchanged';
}

/**
 * Derives every row of a values file against the stored devices, definitions and values: the device
 * by the other RMM's device id mapped by an earlier import, else its serial number, else its hostname (ignoring
 * case, within the organization when the request names one); no device is `invalid`, two devices matching is a
 * `conflict`, never a guess. Then each field: `no-definition`, `invalid` (with the reason), `unchanged` or `set`.
 */
async function deriveValues(db: Db, partnerId: string, orgId: string | undefined, input: Input) {
  const { header, records, sha256 } = importRecords(input, maxImportRows);
  const definitions = await store.selectPartnerDefinitions(db, partnerId);
  const columns = columnRoles(header, input, definitions);
  const [devices, mappings] = await Promise.all([
    store.selectImportDevices(db, partnerId),
    store.selectDeviceMappings(db, partnerId, input.sourceSystem),
  ]);
  const columnOf = (role: Role) => Object.entries(columns).find(([, r]) => r === role)?.[0];
  const idColumn = columnOf('deviceExternalId');
  const fieldColumns = Object.entries(columns).flatMap(([column, role]) =>
    role?.startsWith('field:') ? [{ column, key: role.slice('field:'.length) }] : [],
  );

  const resolve = deviceResolver(
    devices.filter((device) => !orgId || device.orgId === orgId),
    mappings,
    { hostColumn: columnOf('hostname'), serialColumn: columnOf('serialNumber'), idColumn },
  );
  const resolved = records.map(resolve);
  const deviceIds = [...new Set(resolved.flatMap((r) => ('device' in r && r.device ? [r.device.id] : [])))];
  const stored = new Map(
    (deviceIds.length ? await store.selectDeviceValues(db, deviceIds) : []).map((v) => [
      `${v.deviceId}:${v.fieldId}`,
      v.value,
    ]),
  );
  const seen = new Set<string>();
  const rows: (Row & { match: Match; device?: Device; writes: ValueChange[] })[] = resolved.map((r, index) => {
    const row = rowNumberOf(index);
    const externalId = idColumn ? cellText(records[index]![idColumn]) || undefined : undefined;
    if (!('device' in r) || !r.device) {
      const ambiguous = 'ambiguous' in r;
      const annotation: Annotation = ambiguous ? 'conflict' : 'invalid';
      const base = {
        row,
        ...(externalId ? { externalId } : {}),
        annotation,
        outcome: plannedOutcome(annotation),
        match: (ambiguous ? 'ambiguous' : 'no-device') as Match,
        deviceId: null,
        resolvedBy: null,
        reason: r.ambiguous ?? r.missing,
        fields: [],
        writes: [],
      };
      return { ...base, digest: digestOf(base) };
    }
    const device = r.device;
    const writes: ValueChange[] = [];
    const fields = fieldColumns.flatMap(({ column, key }): Row['fields'] => {
      const cell = records[index]![column];
      const field = definitions.find((d) => d.key === key && (d.orgId === null || d.orgId === device.orgId));
      if (!field)
        return [
          { column, key, status: 'no-definition', value: null, reason: `No custom field ${key} for this device` },
        ];
      const read = readValue(field, cell);
      if ('blank' in read) return [];
      const fail = (reason: string) => [{ column, key, status: 'invalid' as ValueStatus, value: null, reason }];
      if (read.value === undefined) return fail(read.reason);
      const notApplicable = appliesTo(field, device);
      if (notApplicable) return fail(notApplicable);
      const slot = `${device.id}:${field.id}`;
      if (seen.has(slot)) return fail('An earlier row of the file sets this field of this device');
      seen.add(slot);
      const before = stored.get(slot) ?? null;
      if (sameValue(before, read.value)) return [{ column, key, status: 'unchanged', value: read.value }];
      writes.push({ device, field, before, after: read.value });
      return [{ column, key, status: 'set', value: read.value }];
    });
    const annotation = annotationOf(fields);
    const base = {
      row,
      ...(externalId ? { externalId } : {}),
      annotation,
      outcome: plannedOutcome(annotation),
      match: 'resolved' as Match,
      deviceId: device.id,
      resolvedBy: r.by,
      fields,
    };
    return { ...base, digest: digestOf(base), device, writes };
  });
  return { columns, rows, sha256 };
}

function summarize(rows: (Row & { match: Match })[]) {
  const summary: Reply['summary'] = {
    set: 0,
    unchanged: 0,
    invalid: 0,
    'no-device': 0,
    ambiguous: 0,
    'no-definition': 0,
    refused: 0,
  };
  const count = (status: keyof Reply['summary']) => {
    summary[status] += 1;
  };
  for (const row of rows) {
    if (row.match === 'changed') count('refused');
    else if (row.match !== 'resolved') count(row.match);
    for (const field of row.fields) count(field.status);
  }
  return summary;
}

const reply = (
  committed: boolean,
  input: Input,
  derived: { columns: Reply['columns']; sha256: string },
  rows: (Row & { match: Match })[],
) => ({
  committed,
  sourceSystem: input.sourceSystem,
  sha256: derived.sha256,
  columns: derived.columns,
  summary: summarize(rows),
  rows: rows.map(({ row, externalId, annotation, outcome, reason, deviceId, resolvedBy, digest, fields }) => ({
    row,
    ...(externalId === undefined ? {} : { externalId }),
    annotation,
    outcome,
    ...(reason === undefined ? {} : { reason }),
    deviceId,
    resolvedBy,
    digest,
    fields,
  })),
});

/** POST /custom-fields/import/values/preview: every row and field derived, nothing stored. */
export async function previewValuesImport(db: Db, principal: Principal, input: Input) {
  const { partnerId, orgId } = await importPartner(db, principal, input, true);
  const derived = await deriveValues(db, partnerId, orgId, input);
  return reply(false, input, derived, derived.rows);
}

/**
 * POST /custom-fields/import/values: re-derives every row and applies only `set` fields, in transactions of
 * about 5,000 values, each with its audit rows (per device: one device.update row with its fields before and after),
 * so an interrupted commit repeated ends in the same state and a second run finds every field `unchanged`. A row
 * whose digest differs from the one echoed from preview (`expected`) is refused whole. The other RMM's device id
 * of every resolved row is kept for the next import. The request is the pass, or one part of `pass`: the pass's
 * one summary row (on the organization named, else the partner's oldest) commits with the write that closes it.
 */
export async function commitValuesImport(db: Db, principal: Principal, input: Input, audit: AuditContext) {
  const { partnerId, orgId } = await importPartner(db, principal, input, true);
  const derived = await deriveValues(db, partnerId, orgId, input);
  const expected = new Map(input.expected?.map((e) => [e.row, e.digest]));
  const rows = derived.rows.map((row) => {
    const digest = expected.get(row.row);
    if (digest === undefined || digest === row.digest) return row;
    return {
      ...row,
      outcome: 'refused' as const,
      match: 'changed' as const,
      reason: 'Changed since preview; preview again',
      fields: [],
      writes: [],
    };
  });
  if (input.pass) await claimPart(db, partnerId, orgId, input, derived.sha256, derived.rows.length);
  // Transactions of about chunkValues values that never split a device: one device.update row per device.
  const chunks: ValueChange[][] = [[]];
  for (const row of rows) {
    if (row.writes.length === 0) continue;
    if (chunks.at(-1)!.length > 0 && chunks.at(-1)!.length + row.writes.length > chunkValues) chunks.push([]);
    chunks.at(-1)!.push(...row.writes);
  }
  for (const chunk of chunks.filter((writes) => writes.length > 0)) {
    const changed = await db.transaction(async (tx) => {
      const written = await store.upsertValues(
        tx,
        chunk.map((w) => ({ deviceId: w.device.id, fieldId: w.field.id, value: w.after! })),
      );
      if (input.pass) await store.addPartSet(tx, input.pass.id, input.pass.firstRow, written.length);
      const before = new Map(written.map((w) => [`${w.deviceId}:${w.fieldId}`, w.before]));
      await auditChange(
        tx,
        audit,
        valueChangeEvents(
          chunk
            .filter((w) => before.has(`${w.device.id}:${w.field.id}`))
            .map((w) => ({ ...w, before: before.get(`${w.device.id}:${w.field.id}`) ?? null })),
        ),
      );
      return chunk.filter((w) => before.has(`${w.device.id}:${w.field.id}`));
    });
    await tellValuesChanged(
      changed.flatMap((w) => (w.after === null ? [] : [{ deviceId: w.device.id, key: w.field.key, value: w.after }])),
    );
  }
  const mappings = rows.flatMap((row) =>
    row.device && row.externalId && row.match === 'resolved'
      ? [{ externalId: row.externalId, deviceId: row.device.id }]
      : [],
  );
  const result = reply(true, input, derived, rows);
  // The import's summary row, written in the transaction that writes the import's last state.
  const auditSummary = async (tx: Tx, details: Record<string, unknown>) => {
    const summaryOrg = await store.selectSummaryOrganization(tx, partnerId, orgId);
    // A partner without a live organization has no device either: nothing to summarize.
    if (!summaryOrg) return;
    await auditChange(tx, audit, {
      orgId: summaryOrg.id,
      action: 'custom_field.import.values',
      resourceType: 'organization',
      resourceId: summaryOrg.id,
      resourceName: summaryOrg.name,
      details: {
        sourceSystem: input.sourceSystem,
        fileName: input.fileName ?? null,
        orgId: orgId ?? null,
        ...details,
      },
    });
  };
  if (!input.pass) {
    await db.transaction(async (tx) => {
      if (mappings.length > 0) await store.upsertDeviceMappings(tx, partnerId, input.sourceSystem, mappings);
      await auditSummary(tx, { sha256: derived.sha256, rows: rows.length, summary: result.summary });
    });
    return result;
  }
  if (mappings.length > 0)
    await db.transaction((tx) => store.upsertDeviceMappings(tx, partnerId, input.sourceSystem, mappings));
  const spec = input.pass;
  const pass = await recordPart(
    db,
    partnerId,
    orgId,
    input,
    derived.sha256,
    rows.length,
    result.summary,
    (tx, closed) =>
      auditSummary(tx, {
        passId: closed.id,
        sha256: spec.sha256,
        rows: spec.rows,
        requests: closed.requests,
        summary: closed.summary,
      }),
  );
  const { summary: _summary, requests: _requests, ...passReply } = pass;
  return { ...result, pass: passReply };
}

type Summary = Reply['summary'];

/**
 * Whether the request is a part of the pass it names (before anything is written, and again under the pass's lock):
 * within the file, the same file, the same rows as when the part was sent before, overlapping no other part.
 */
function checkPart(
  pass: store.PassRecord | undefined,
  partnerId: string,
  orgId: string | undefined,
  input: Input,
  sha256: string,
  rowCount: number,
) {
  const spec = input.pass!;
  if (spec.firstRow + rowCount > spec.rows)
    throw ValidationFailed('The part ends after the last row of the file', [
      {
        path: 'body.pass.firstRow',
        message: `Rows ${spec.firstRow}–${spec.firstRow + rowCount - 1} do not fit a file of ${spec.rows} rows`,
        code: 'too_big',
      },
    ]);
  if (!pass) return;
  if (pass.partnerId !== partnerId) throw NotFound('Import pass');
  if (
    pass.fileSha256 !== spec.sha256 ||
    pass.fileRows !== spec.rows ||
    pass.sourceSystem !== input.sourceSystem ||
    pass.orgId !== (orgId ?? null)
  )
    throw Conflict('The import pass was opened for another file (sha256, rows, sourceSystem or orgId differ)');
  const key = String(spec.firstRow);
  const earlier = pass.parts[key];
  if (earlier && (earlier.sha256 !== sha256 || earlier.rows !== rowCount))
    throw Conflict(`Part ${spec.firstRow} of the import pass was committed with other rows`);
  const overlaps = Object.entries(pass.parts).some(
    ([first, part]) =>
      first !== key && Number(first) < spec.firstRow + rowCount && spec.firstRow < Number(first) + part.rows,
  );
  if (overlaps) throw Conflict('The part overlaps another part of the import pass');
}

/** The request's pass (opened by its first request), locked, with the request's part checked against it. */
async function lockCheckedPass(
  tx: Db,
  partnerId: string,
  orgId: string | undefined,
  input: Input,
  sha256: string,
  rowCount: number,
) {
  const spec = input.pass!;
  const pass = await store.lockPass(tx, {
    id: spec.id,
    partnerId,
    orgId: orgId ?? null,
    sourceSystem: input.sourceSystem,
    fileName: input.fileName ?? null,
    fileSha256: spec.sha256,
    fileRows: spec.rows,
  });
  checkPart(pass, partnerId, orgId, input, sha256, rowCount);
  return pass;
}

/**
 * Claims a request's part of a pass before any value is written, so a part that overlaps another (even one still
 * being written) is refused with nothing written. A claimed part counts no rows until it is recorded.
 */
async function claimPart(
  db: Db,
  partnerId: string,
  orgId: string | undefined,
  input: Input,
  sha256: string,
  rowCount: number,
) {
  const spec = input.pass!;
  // A part past the file's end is refused before the pass is opened.
  checkPart(undefined, partnerId, orgId, input, sha256, rowCount);
  await db.transaction(async (tx) => {
    const pass = await lockCheckedPass(tx, partnerId, orgId, input, sha256, rowCount);
    const key = String(spec.firstRow);
    if (pass.parts[key]) return;
    const claimed = { rows: rowCount, sha256, set: 0, summary: {}, done: false };
    await store.updatePass(tx, pass.id, { ...pass.parts, [key]: claimed }, false);
  });
}

/**
 * Records one request's part of a pass and closes the pass when its parts cover every row of the file. A part sent
 * again (a retry) must hold the same rows; the values its earlier runs wrote (counted as each chunk was written) then
 * read `unchanged` and are counted as set. Another partner's pass is 404; one opened for another file is 409.
 */
async function recordPart(
  db: Db,
  partnerId: string,
  orgId: string | undefined,
  input: Input,
  sha256: string,
  rowCount: number,
  summary: Summary,
  auditClosed: (tx: Tx, pass: { id: string; requests: number; summary: Summary }) => Promise<void>,
) {
  const spec = input.pass!;
  return db.transaction(async (tx) => {
    const pass = await lockCheckedPass(tx, partnerId, orgId, input, sha256, rowCount);
    const key = String(spec.firstRow);
    // Every value this part wrote, in this run and in runs cut short before it, was counted as it was written.
    const set = pass.parts[key]?.set ?? summary.set;
    const writtenBefore = Math.max(0, set - summary.set);
    const parts = {
      ...pass.parts,
      [key]: {
        rows: rowCount,
        sha256,
        set,
        summary: { ...summary, unchanged: Math.max(0, summary.unchanged - writtenBefore) },
        done: true,
      },
    };
    const rowsCommitted = Object.values(parts)
      .filter((part) => part.done !== false)
      .reduce((sum, part) => sum + part.rows, 0);
    const summaryWritten = pass.closedAt === null && rowsCommitted === spec.rows;
    await store.updatePass(tx, pass.id, parts, summaryWritten);
    const total = Object.fromEntries(Object.keys(summary).map((status) => [status, 0])) as Summary;
    for (const part of Object.values(parts))
      for (const status of Object.keys(total) as (keyof Summary)[])
        total[status] += status === 'set' ? part.set : (part.summary[status] ?? 0);
    const recorded = {
      id: pass.id,
      rows: spec.rows,
      rowsCommitted,
      closed: pass.closedAt !== null || summaryWritten,
      summaryWritten,
      requests: Object.values(parts).filter((part) => part.done !== false).length,
      summary: total,
    };
    // The pass's summary row commits with the write that closes the pass.
    if (summaryWritten) await auditClosed(tx, recorded);
    return recorded;
  });
}
