import { type FieldType, type FieldValue, maxTextLength, maxUrlLength } from './schemas.ts';

/** What validating a value needs of its definition. */
export interface ValueRule {
  type: FieldType;
  choices: string[] | null;
  min: number | null;
  max: number | null;
}

export type Checked = { value: FieldValue; reason?: undefined } | { value?: undefined; reason: string };

const isDate = (text: string) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
};

const isUrl = (text: string) => {
  if (text.length > maxUrlLength || !/^https?:\/\//i.test(text)) return false;
  return URL.canParse(text);
};

/**
 * A value as the API receives it, checked against its definition: the JSON type the field's type
 * stores, a dropdown's choice, a number's range, a date as YYYY-MM-DD, text up to 10,000 characters without NUL.
 * Nothing is coerced: "12" is not a number, "true" is not a boolean.
 */
export function checkValue(rule: ValueRule, value: FieldValue): Checked {
  const fail = (reason: string): Checked => ({ reason });
  switch (rule.type) {
    case 'text':
      if (typeof value !== 'string') return fail('A text field holds a string');
      if (value.length > maxTextLength) return fail(`Text is longer than ${maxTextLength} characters`);
      if (value.includes('\u0000')) return fail('Text must not contain the NUL character');
      return { value };
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return fail('A number field holds a number');
      if (rule.min !== null && value < rule.min) return fail(`The number is below the minimum of ${rule.min}`);
      if (rule.max !== null && value > rule.max) return fail(`The number is above the maximum of ${rule.max}`);
      return { value };
    case 'boolean':
      return typeof value === 'boolean' ? { value } : fail('A boolean field holds true or false');
    case 'date':
      return typeof value === 'string' && isDate(value) ? { value } : fail('A date is a calendar date as YYYY-MM-DD');
    case 'dropdown':
      if (typeof value !== 'string') return fail('A dropdown field holds one of its choices');
      return rule.choices?.includes(value) ? { value } : fail(`"${value}" is not one of the field's choices`);
    case 'multi-select': {
      if (!Array.isArray(value)) return fail('A multi-select field holds an array of its choices');
      const unknown = value.find((item) => !rule.choices?.includes(item));
      if (unknown !== undefined) return fail(`"${unknown}" is not one of the field's choices`);
      if (new Set(value).size !== value.length) return fail('Each choice at most once');
      return { value };
    }
    case 'url':
      return typeof value === 'string' && isUrl(value)
        ? { value }
        : fail(`A URL is an http or https address of at most ${maxUrlLength} characters`);
  }
}

/**
 * A value as an export file writes it (a CSV cell, a JSON string), read for the field's type and then checked as
 * checkValue checks it. The reading is exact, never a guess: a number is a decimal number, a boolean one of
 * true/false/yes/no/1/0 (any case), a multi-select its choices separated by commas; a blank cell is no value.
 */
export function readValue(rule: ValueRule, cell: unknown): Checked | { blank: true } {
  if (cell === null || cell === undefined || (typeof cell === 'string' && cell.trim() === '')) return { blank: true };
  if (typeof cell !== 'string') return checkValue(rule, cell as FieldValue);
  const text = rule.type === 'text' ? cell : cell.trim();
  switch (rule.type) {
    case 'number':
      return /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)
        ? checkValue(rule, Number(text))
        : { reason: `"${text}" is not a number` };
    case 'boolean': {
      const word = text.toLowerCase();
      if (['true', 'yes', '1'].includes(word)) return { value: true };
      if (['false', 'no', '0'].includes(word)) return { value: false };
      return { reason: `"${text}" is not a boolean (true, false, yes, no, 1 or 0)` };
    }
    case 'multi-select':
      return checkValue(
        rule,
        text.split(',').map((item) => item.trim()),
      );
    default:
      return checkValue(rule, text);
  }
}

/** Two stored values are the same value (a multi-select compares as a set). */
export function sameValue(a: FieldValue | null | undefined, b: FieldValue | null | undefined): boolean {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item) => b.includes(item));
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}
