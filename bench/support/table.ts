/** Rows of cells printed as aligned columns; a row of one cell is a section heading. */
export function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((cell, i) =>
    Math.max(cell.length, ...rows.filter((row) => row.length > 1).map((row) => row[i]?.length ?? 0)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.map((row) => (row.length === 1 ? row[0]! : line(row))),
  ].join('\n');
}
