/**
 * One CSV record (RFC 4180) as the viewer writes it, cell for cell as the service writes its exports
 * (shared/audit/export.ts csvRecord, tested against the same cases): the viewer may import only types from shared/,
 * so the rule is kept twice. A field holding a comma, quote, CR or LF is quoted, quotes doubled; a null is an empty
 * field, an empty string "". Against formula injection a field starting with = + - @ tab, CR or ' gets a leading '
 * (reversible: a reader drops one leading ').
 */
export function csvRecord(values: readonly (string | number | null)[]): string {
  return values
    .map((value) => {
      if (value === null) return '';
      const text = /^[=+\-@\t\r']/.test(String(value)) ? `'${value}` : String(value);
      return text === '' || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
    })
    .join(',');
}
