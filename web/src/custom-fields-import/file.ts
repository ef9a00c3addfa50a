/**
 * The file a user uploads to the import wizard, read in the browser: CSV (RFC 4180, header row) or JSON (an array of
 * objects, or an object holding one under rows, data, results or items), its SHA-256, and the requests it is sent
 * in. Cells stay as the file wrote them: the server reads each for its field's type.
 */
import { csvRecord } from '../csv-record.ts';

export interface ImportFile {
  name: string;
  sha256: string;
  header: string[];
  records: Record<string, unknown>[];
}

// Line breaks by code or escape: the minifier would write "\n" as a literal line break in a template string.
const lf = 10;
const cr = 13;
const crlf = decodeURIComponent('%0D%0A');

/** Rows per request, and bytes of JSON per request: well within API Gateway's 30 s and 6 MB. */
export const chunkRows = 1000;
const chunkBytes = 4 * 1024 * 1024;

/** RFC 4180: quoted cells with "" escapes, CRLF or LF, a byte-order mark ignored; blank lines skipped. */
export function parseCsv(text: string): { header: string[]; rows: string[][] } {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const source = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    const code = source.charCodeAt(i);
    if (quoted) {
      if (c === '"' && source[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (code === lf || code === cr) {
      if (code === cr && source.charCodeAt(i + 1) === lf) i++;
      row.push(cell);
      cell = '';
      if (row.some((value) => value !== '')) rows.push(row);
      row = [];
    } else cell += c;
  }
  if (quoted) throw new Error('The CSV file ends inside a quoted cell');
  row.push(cell);
  if (row.some((value) => value !== '')) rows.push(row);
  const [header, ...data] = rows;
  if (!header) throw new Error('The CSV file is empty');
  return { header: header.map((name) => name.trim()), rows: data };
}

/** Nested objects (a Datto device's `udf: { udf1 … }`) become `udf.udf1` columns. */
function flatten(record: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(record).flatMap(([key, value]) =>
      value && typeof value === 'object' && !Array.isArray(value)
        ? Object.entries(flatten(value as Record<string, unknown>, `${prefix}${key}.`))
        : [[`${prefix}${key}`, value]],
    ),
  );
}

function jsonRecords(text: string): Record<string, unknown>[] {
  const parsed: unknown = JSON.parse(text);
  const holder = parsed as Record<string, unknown>;
  const list = Array.isArray(parsed)
    ? parsed
    : (['rows', 'data', 'results', 'items'].map((key) => holder?.[key]).find(Array.isArray) as unknown[] | undefined);
  if (!list) throw new Error('The JSON file holds no array of rows');
  return list.map((item, i) => {
    if (!item || typeof item !== 'object' || Array.isArray(item)) throw new Error(`Row ${i + 1} is not an object`);
    return flatten(item as Record<string, unknown>);
  });
}

async function sha256Of(bytes: ArrayBuffer) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return [...digest].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

export async function readImportFile(file: File): Promise<ImportFile> {
  const bytes = await file.arrayBuffer();
  const text = new TextDecoder().decode(bytes);
  const json = /\.json$/i.test(file.name) || /^\s*[[{]/.test(text);
  let header: string[];
  let records: Record<string, unknown>[];
  if (json) {
    records = jsonRecords(text);
    header = [...new Set(records.flatMap((record) => Object.keys(record)))];
  } else {
    const csv = parseCsv(text);
    header = csv.header;
    records = csv.rows.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i] ?? ''])));
  }
  if (records.length === 0) throw new Error('The file has no data rows');
  return { name: file.name, sha256: await sha256Of(bytes), header, records };
}

/** The file's rows as requests: at most chunkRows rows and about chunkBytes of JSON each. */
export function chunksOf(records: Record<string, unknown>[]): { firstRow: number; rows: Record<string, unknown>[] }[] {
  const chunks: { firstRow: number; rows: Record<string, unknown>[] }[] = [];
  let current: Record<string, unknown>[] = [];
  let bytes = 0;
  let firstRow = 0;
  records.forEach((record, i) => {
    const size = JSON.stringify(record).length + 1;
    if (current.length > 0 && (current.length >= chunkRows || bytes + size > chunkBytes)) {
      chunks.push({ firstRow, rows: current });
      current = [];
      bytes = 0;
      firstRow = i;
    }
    current.push(record);
    bytes += size;
  });
  if (current.length > 0) chunks.push({ firstRow, rows: current });
  return chunks;
}

const csvValue = (value: unknown) =>
  value === null || value === undefined ? null : Array.isArray(value) ? value.join(', ') : String(value);

/** A CSV file of rows: the given columns first, then the file's own; formula cells neutralised (csvRecord). */
export function toCsv(header: string[], rows: unknown[][]): string {
  return `${[header, ...rows].map((row) => csvRecord(row.map(csvValue))).join(crlf)}${crlf}`;
}
