import { describe, expect, it } from 'vitest';
import { parseCsv } from '#shared/imports/csv.ts';

describe('parseCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, CRLF or LF, and skips blank lines', () => {
    const csv = 'name,notes\r\n"Doe, Jane","said ""hi""\nthen left"\n\nBob,\r\n';
    expect(parseCsv(csv)).toEqual({
      header: ['name', 'notes'],
      records: [
        ['Doe, Jane', 'said "hi"\nthen left'],
        ['Bob', ''],
      ],
    });
  });

  it('keeps a record of one quoted empty field and reads a last row without a line break', () => {
    expect(parseCsv('name\n""\nAda').records).toEqual([[''], ['Ada']]);
  });

  it.each([
    ['a,b\n"x,y\n', 'Row 2, column 1: a quoted field is not closed'],
    ['a,b\n"x"y,z\n', 'Row 2, column 1: text after a closing quote'],
    ['a,b\nx,y"z\n', 'Row 2, column 2: a quote inside an unquoted field'],
    ['a,b\nx,y\nz\n', 'Row 3, column 2: 1 columns where the header has 2'],
    ['', 'Row 1, column 1: the header row is missing'],
  ])('refuses %j naming row and column', (csv, message) => {
    expect(() => parseCsv(csv)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ message })] }),
    );
  });
});
