import { CsvError, parse } from 'csv-parse/sync';
import { ValidationFailed } from '../errors.ts';
import { nameKey } from './name-key.ts';

/** What each csv-parse error means to the person who exported the file. */
const faults: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is not closed',
  CSV_INVALID_CLOSING_QUOTE: 'text after a closing quote',
  INVALID_OPENING_QUOTE: 'a quote inside an unquoted field',
  CSV_INVALID_OPENING_QUOTE: 'a quote inside an unquoted field',
};

/**
 * RFC 4180 CSV read by csv-parse: fields separated by commas, optionally quoted with `"` (a quote inside doubled),
 * rows ended by CRLF or LF, blank lines skipped, a UTF-8 byte-order mark ignored. The first row is the header. A
 * malformed file (a quote left open, a quote inside an unquoted field, text after a closing quote, a row whose
 * column count differs from the header's) is a 400 naming the row and column, and nothing is read. Rows are
 * numbered as every import report numbers them: data rows from 1, the header not counted (it is "the header").
 */
export function parseCsv(text: string, location = 'body.csv'): { header: string[]; records: string[][] } {
  let rows: string[][];
  try {
    rows = parse(text, { skip_empty_lines: true, record_delimiter: ['\r\n', '\n'], bom: true });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const context = error as CsvError & { records?: number; index?: number; record?: string[] };
    // csv-parse counts the header among the records read before the faulty one.
    const row = context.records ?? 0;
    if (error.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
      const found = context.record?.length ?? 0;
      const expected = expectedColumns(error);
      // The first column beyond the shorter of the two rows.
      const what = `${found} columns where the header has ${expected}`;
      throw malformed(location, row, Math.min(found, expected) + 1, what);
    }
    const column = (context.index ?? 0) + 1;
    const what = faults[error.code] ?? error.message;
    throw malformed(location, row, column, what);
  }
  const [header, ...records] = rows;
  if (!header) throw malformed(location, 0, 1, 'the header row is missing');
  return { header: header.map((name) => name.trim()), records };
}

/**
 * A CSV's data rows as records keyed by header, a blank cell absent (as a blank string is in a JSON row), the others
 * as written: 1 to `maxRows` of them, else a 400.
 */
export function csvRecords(text: string, maxRows: number, location = 'body.csv') {
  const { header, records } = parseCsv(text, location);
  if (records.length === 0 || records.length > maxRows)
    throw ValidationFailed(`The CSV must hold 1 to ${maxRows.toLocaleString('en')} data rows`, [
      { path: location, message: `${records.length} data rows; 1 to ${maxRows} allowed`, code: 'too_big' },
    ]);
  return {
    header,
    records: records.map((cells) =>
      Object.fromEntries(
        header.flatMap((name, i) => {
          const cell = cells[i] ?? '';
          return cell.trim() === '' ? [] : [[name, cell]];
        }),
      ),
    ),
  };
}

const isBlank = (value: unknown) => typeof value === 'string' && !value.trim();

/** A JSON row with its blank strings (empty or only whitespace) absent, as a blank CSV cell is; copied only if it has one. */
export function withoutBlanks(row: Record<string, unknown>): Record<string, unknown> {
  if (!Object.values(row).some(isBlank)) return row;
  return Object.fromEntries(Object.entries(row).filter(([, value]) => !isBlank(value)));
}

/** A column header or field name compared loosely: case, spaces, - and _ ignored. */
export const looseName = (name: string) => nameKey(name).replace(/[\s_-]+/g, '');

/**
 * The records of an import request, JSON `rows` or `csv`, in one form: keyed by field, blank values absent, CSV
 * cells trimmed. A CSV column is read as a field when the caller's mapping names it for the field, or, without a mapping, when its header
 * is the field's name compared loosely; other columns are ignored.
 */
export function importRecords<F extends string>(
  input: { rows?: Record<string, unknown>[]; csv?: string },
  options: { fields: readonly F[]; maxRows: number; mapping?: Partial<Record<F, string>> },
): Record<string, unknown>[] {
  if (input.rows) return input.rows.map(withoutBlanks);
  const { header, records } = csvRecords(input.csv!, options.maxRows);
  const columns = options.fields.flatMap((field) => {
    const wanted = options.mapping ? options.mapping[field]?.trim() : field;
    if (wanted === undefined) return [];
    const column = options.mapping
      ? header.find((name) => name === wanted)
      : header.find((name) => looseName(name) === looseName(field));
    return column === undefined ? [] : [{ field, column }];
  });
  return records.map((record) =>
    Object.fromEntries(
      columns.flatMap(({ field, column }) => (column in record ? [[field, record[column]!.trim()]] : [])),
    ),
  );
}

/** The header's column count, which csv-parse states in its message ("expect 2, got 1"). */
function expectedColumns(error: CsvError): number {
  return Number(/expect (\d+)/.exec(error.message)?.[1] ?? 0);
}

function malformed(location: string, row: number, column: number, what: string) {
  const where = row === 0 ? `Header, column ${column}` : `Row ${row}, column ${column}`;
  return ValidationFailed(`Malformed CSV: ${what}`, [
    { path: location, message: `${where}: ${what}`, code: 'invalid_csv' },
  ]);
}
