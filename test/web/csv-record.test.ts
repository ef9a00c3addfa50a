/**
 * Every CSV the product writes neutralises formula cells the same way: the service's exports (shared/audit/export.ts)
 * and the viewer's files (web/src/csv-record.ts, such as the import wizard's rows not applied) run the same cases.
 */
import { describe, expect, it } from 'vitest';
import { csvRecord as serviceRecord } from '#shared/audit/export.ts';
import { csvRecord as viewerRecord } from '../../web/src/csv-record.ts';
import { toCsv } from '../../web/src/custom-fields-import/file.ts';

const cases: [string, readonly (string | number | null)[], string][] = [
  ['plain values', ['Café', 42, 'a b'], 'Café,42,a b'],
  ['a null is empty, an empty string quoted', [null, ''], ',""'],
  ['quotes, commas and line breaks quoted', ['say "hi"', 'a,b', 'x\ny'], '"say ""hi""","a,b","x\ny"'],
  ['= formula', ['=HYPERLINK("http://x")'], `"'=HYPERLINK(""http://x"")"`],
  ['+ formula', ['+1+1'], "'+1+1"],
  ['- formula and negative numbers', ['-2+3', -5], "'-2+3,'-5"],
  ['@ formula', ['@SUM(A1)'], "'@SUM(A1)"],
  ['leading tab', ['\tcmd'], "'\tcmd"],
  ['leading CR (quoted for the CR)', ['\rcmd'], `"'\rcmd"`],
  ['a leading apostrophe is doubled, so one is always dropped', ["'quoted"], "''quoted"],
  ['only the first character counts', ['a=b', 'x-1'], 'a=b,x-1'],
];

describe.each([
  ['the service (shared)', serviceRecord],
  ['the viewer (web)', viewerRecord],
])('CSV records written by %s', (_, csvRecord) => {
  it.each(cases)('%s', (_name, values, expected) => {
    expect(csvRecord(values)).toBe(expected);
  });
});

describe("the import wizard's CSV of rows not applied", () => {
  it('neutralises formula cells, joins lists and leaves absent cells empty', () => {
    expect(
      toCsv(
        ['row', 'name', 'tags'],
        [
          [3, '=cmd|/c calc', ['a', 'b']],
          [4, undefined, null],
        ],
      ),
    ).toBe('row,name,tags\r\n3,\'=cmd|/c calc,"a, b"\r\n4,,\r\n');
  });
});
