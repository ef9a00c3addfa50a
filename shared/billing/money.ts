/**
 * Exact decimal arithmetic for money: a decimal string is read as a fraction of two bigints, every product and
 * quotient stays such a fraction, and a figure is rounded once, to the currency's minor unit, half to even. No
 * floating point ever holds an amount (0.1 + 0.2 is not 0.3 in binary).
 */

/** A rational number: numerator over a positive denominator. */
export interface Fraction {
  num: bigint;
  den: bigint;
}

export const decimalPattern = /^-?\d{1,12}(\.\d{1,6})?$/;

/** A decimal string (`12.5`, `-0.0125`) as an exact fraction. */
export function parseDecimal(text: string): Fraction {
  if (!decimalPattern.test(text)) throw new RangeError(`Not a decimal: ${text}`);
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = text.replace('-', '').split('.');
  const num = BigInt(`${whole}${fraction}`);
  return { num: negative ? -num : num, den: 10n ** BigInt(fraction.length) };
}

export const fraction = (num: bigint, den = 1n): Fraction => (den < 0n ? { num: -num, den: -den } : { num, den });

export const times = (a: Fraction, b: Fraction): Fraction => ({ num: a.num * b.num, den: a.den * b.den });

/** The integer nearest to num/den, a tie going to the even neighbour (banker's rounding). */
export function roundHalfEven(value: Fraction): bigint {
  const { num, den } = value;
  const negative = num < 0n;
  const n = negative ? -num : num;
  let q = n / den;
  const r2 = (n % den) * 2n;
  if (r2 > den || (r2 === den && q % 2n === 1n)) q += 1n;
  return negative ? -q : q;
}

/** A figure rounded to minor units (cents for 2 digits). */
export const toMinor = (value: Fraction, minorDigits: number): bigint =>
  roundHalfEven(times(value, fraction(10n ** BigInt(minorDigits))));

/** Minor units as a decimal string with exactly the currency's digits: 1234n, 2 → "12.34". */
export function formatMinor(minor: bigint, minorDigits: number): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(minorDigits + 1, '0');
  const whole = digits.slice(0, digits.length - minorDigits);
  const part = minorDigits > 0 ? `.${digits.slice(digits.length - minorDigits)}` : '';
  return `${negative ? '-' : ''}${whole}${part}`;
}

/** A stored numeric's text (`12.500000`) back in minor units; it was rounded to them when it was stored. */
export function minorOf(text: string, minorDigits: number): bigint {
  return toMinor(parseDecimal(trimZeros(text)), minorDigits);
}

/** A decimal string without trailing fractional zeros: `4.500000` → `4.5`, `19.0000` → `19`. */
export function trimZeros(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

/** The digits of a currency's minor unit as ISO 4217 defines them (EUR 2, JPY 0, BHD 3), from the runtime's ICU data. */
export function minorDigitsOf(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
}

/** Whether the runtime knows the code as an ISO 4217 currency. */
export function isCurrency(code: string): boolean {
  return /^[A-Z]{3}$/.test(code) && Intl.supportedValuesOf('currency').includes(code);
}
