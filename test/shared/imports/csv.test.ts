import { describe, expect, it } from 'vitest';
import { csvRecords, importRecords, parseCsv } from '#shared/imports/csv.ts';

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
    ['a,b\n"x,y\n', 'Row 1, column 1: a quoted field is not closed'],
    ['a,b\n"x"y,z\n', 'Row 1, column 1: text after a closing quote'],
    ['a,b\nx,y"z\n', 'Row 1, column 2: a quote inside an unquoted field'],
    ['a,b\nx,y\nz\n', 'Row 2, column 2: 1 columns where the header has 2'],
    ['a,"b\nx,y\n', 'Header, column 2: a quoted field is not closed'],
    ['', 'Header, column 1: the header row is missing'],
  ])('refuses %j naming row and column', (csv, message) => {
    expect(() => parseCsv(csv)).toThrow(
      expect.objectContaining({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ message })] }),
    );
  });

  it('numbers data rows from 1, the header not counted, skipped blank lines not counted either', () => {
    expect(() => parseCsv('a,b\n\nx,y\n\nz\n')).toThrow(
      expect.objectContaining({ details: [expect.objectContaining({ message: expect.stringMatching(/^Row 2,/) })] }),
    );
  });
});

describe('import records', () => {
  it('reads blank CSV cells and blank JSON strings as absent values', () => {
    expect(csvRecords('hostname,serialNumber\nPC-1,\nPC-2, SN2 \n', 10).records).toEqual([
      { hostname: 'PC-1' },
      { hostname: 'PC-2', serialNumber: ' SN2 ' },
    ]);
    const fields = ['name', 'email'] as const;
    expect(importRecords({ rows: [{ name: 'Ada', email: '  ' }] }, { fields, maxRows: 10 })).toEqual([{ name: 'Ada' }]);
  });

  it('reads the same fields from CSV as from JSON: columns named loosely, or by the mapping', () => {
    const fields = ['name', 'externalId'] as const;
    const csv = 'Name,External ID,Other\nAda,a-1,x\n';
    expect(importRecords({ csv }, { fields, maxRows: 10 })).toEqual([{ name: 'Ada', externalId: 'a-1' }]);
    expect(importRecords({ csv }, { fields, maxRows: 10, mapping: { name: 'Other' } })).toEqual([{ name: 'x' }]);
  });

  it('refuses a CSV without data rows or with too many', () => {
    expect(() => csvRecords('name\n', 10)).toThrow(expect.objectContaining({ code: 'VALIDATION_FAILED' }));
    expect(() => csvRecords('name\na\nb\n', 1)).toThrow(/1 to 1 data rows/);
  });
});
