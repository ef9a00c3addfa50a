import { CsvError, parse } from 'csv-parse/sync';
import { ValidationFailed } from '../errors.ts';

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
 * column count differs from the header's) is a 400 naming the row and column (both from 1, the header being row 1),
 * and nothing is read.
 */
export function parseCsv(text: string, location = 'body.csv'): { header: string[]; records: string[][] } {
  let rows: string[][];
  try {
    rows = parse(text, { skip_empty_lines: true, record_delimiter: ['\r\n', '\n'], bom: true });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const context = error as CsvError & { records?: number; index?: number; record?: string[] };
    const row = (context.records ?? 0) + 1;
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
  if (!header) throw malformed(location, 1, 1, 'the header row is missing');
  return { header: header.map((name) => name.trim()), records };
}

/** The header's column count, which csv-parse states in its message ("expect 2, got 1"). */
function expectedColumns(error: CsvError): number {
  return Number(/expect (\d+)/.exec(error.message)?.[1] ?? 0);
}

function malformed(location: string, row: number, column: number, what: string) {
  return ValidationFailed(`Malformed CSV: ${what}`, [
    { path: location, message: `Row ${row}, column ${column}: ${what}`, code: 'invalid_csv' },
  ]);
}
