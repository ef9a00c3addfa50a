import { ValidationFailed } from '../errors.ts';

/**
 * RFC 4180 CSV: fields separated by commas, optionally quoted with `"` (a quote inside doubled), rows ended by CRLF
 * or LF; a trailing line break ends the last row. The first row is the header. A malformed file (a quote left
 * open, a quote inside an unquoted field, text after a closing quote, a row whose column count differs from the
 * header's) is a 400 naming the row and column (both from 1, the header being row 1), and nothing is read.
 */
export function parseCsv(text: string, location = 'body.csv'): { header: string[]; records: string[][] } {
  const rows: { cells: string[]; line: number }[] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let afterQuote = false;
  let line = 1;
  const fault = (message: string): never => {
    throw ValidationFailed(`Malformed CSV: ${message}`, [
      { path: location, message: `Row ${line}, column ${row.length + 1}: ${message}`, code: 'invalid_csv' },
    ]);
  };
  const endField = () => {
    row.push(field);
    field = '';
    afterQuote = false;
  };
  let i = 0;
  const endRow = () => {
    endField();
    // A blank line is no record (exports often end with one or two).
    if (row.length > 1 || row[0] !== '' || text[i - 1] === '"') rows.push({ cells: row, line });
    row = [];
    line += 1;
  };
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else {
        quoted = false;
        afterQuote = true;
      }
    } else if (c === ',') endField();
    else if (c === '\n' || (c === '\r' && text[i + 1] === '\n')) {
      if (c === '\r') i += 1;
      endRow();
    } else if (afterQuote) fault('text after a closing quote');
    else if (c === '"') {
      if (field !== '') fault('a quote inside an unquoted field');
      quoted = true;
    } else field += c;
  }
  if (quoted) fault('a quoted field is not closed');
  if (field !== '' || row.length > 0 || afterQuote) endRow();
  const [first, ...records] = rows;
  if (!first) {
    line = 1;
    fault('the header row is missing');
  }
  const header = first!.cells;
  for (const record of records) {
    if (record.cells.length !== header.length) {
      throw ValidationFailed('Malformed CSV: wrong column count', [
        {
          path: location,
          message: `Row ${record.line}, column ${Math.min(record.cells.length, header.length) + 1}: ${record.cells.length} columns where the header has ${header.length}`,
          code: 'invalid_csv',
        },
      ]);
    }
  }
  return { header: header.map((name) => name.trim()), records: records.map((record) => record.cells) };
}
