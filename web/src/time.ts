/** Times as people read them: local time zone in the page, the exact UTC value on hover. */

const shortFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const longFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });

export function localTime(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : shortFormat.format(at);
}

export function localTimeLong(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? iso : longFormat.format(at);
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * The instant a from/to filter names, read as the API reads it (docs/audit.md "Reading the trail"): a date alone is the
 * start (from) or the end (to) of that UTC day; a time without an offset is UTC.
 */
export function filterInstant(value: string, bound: 'from' | 'to'): Date | undefined {
  if (!value) return undefined;
  let iso = value;
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) iso = `${value}T${bound === 'from' ? '00:00:00.000' : '23:59:59.999'}Z`;
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value)) iso = `${value}Z`;
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** A datetime-local input's value (local time, to the second) for an instant. */
export function localInputValue(at: Date): string {
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}T${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/**
 * The instant of a datetime-local input's value (local time), as ISO 8601 UTC. A `to` includes the whole minute
 * or second it names, to the microsecond the trail records, as a reader of "to 12:30" expects.
 */
export function instantOfLocalInput(value: string, bound: 'from' | 'to'): string | undefined {
  const parts = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.exec(value);
  if (!parts) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) return undefined;
  if (bound === 'from') return at.toISOString();
  if (!parts[1]) at.setSeconds(59);
  return at.toISOString().replace(/\.\d{3}Z$/, '.999999Z');
}
