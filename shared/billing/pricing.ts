import {
  type Fraction,
  formatMinor,
  fraction,
  minorDigitsOf,
  parseDecimal,
  times,
  toMinor,
  trimZeros,
} from './money.ts';
import type { InvoiceLine, StatementDevice, UsageStatement } from './schemas.ts';
import type { ContractLineRow } from './store.ts';

/**
 * The lines of one period from the contract's lines and the period's usage statement. Each line's amount is rounded
 * once to the currency's minor unit (half to even), its tax computed from that rounded amount and rounded once too.
 *
 * - flat: amount × billable days ÷ days in the period (the whole amount for a period billed throughout);
 * - per-device, per-device-role: unit price × device-days ÷ days in the period;
 * - included-overage: unit price × overage device-days ÷ days in the period, where the overage device-days are the
 *   device-days beyond included quantity × billable days: the average daily count above the included quantity, for
 *   the days billed;
 * - manual: its amount, once, on the first live invoice that carries it.
 */
export function priceLines(input: {
  lines: ContractLineRow[];
  statement: UsageStatement;
  taxRatePercent: string;
  currency: string;
  groupMembers: Map<string, Set<string>>;
  billedManualLines: Set<string>;
}) {
  const digits = minorDigitsOf(input.currency);
  const { statement } = input;
  const rate = parseDecimal(trimZeros(input.taxRatePercent));
  const periodDays = BigInt(statement.periodDays);
  const priced: InvoiceLine[] = [];
  for (const line of input.lines) {
    if (line.type === 'manual' && input.billedManualLines.has(line.id)) continue;
    const deviceDays =
      line.type === 'flat' || line.type === 'manual' ? null : countedDays(line, statement.devices, input.groupMembers);
    const { quantity, unit, value } = lineValue(line, statement, deviceDays, periodDays);
    const amount = toMinor(value, digits);
    const tax = line.taxable ? toMinor(times(fraction(amount), times(rate, fraction(1n, 100n))), 0) : 0n;
    priced.push({
      position: priced.length + 1,
      source: { type: 'contract-line', contractLineId: line.id, lineType: line.type },
      description: line.description,
      periodStart: statement.periodStart,
      periodEnd: statement.periodEnd,
      periodDays: statement.periodDays,
      billableDays: statement.billableDays,
      deviceDays,
      includedQuantity: line.includedQuantity,
      quantity,
      unit,
      unitPrice: trimZeros((line.unitPrice ?? line.amount)!),
      amount: formatMinor(amount, digits),
      taxable: line.taxable,
      taxRatePercent: line.taxable ? trimZeros(input.taxRatePercent) : '0',
      tax: formatMinor(tax, digits),
      total: formatMinor(amount + tax, digits),
    });
  }
  return { lines: priced, ...totals(priced, digits) };
}

function lineValue(
  line: ContractLineRow,
  statement: UsageStatement,
  deviceDays: number | null,
  periodDays: bigint,
): { quantity: string; unit: InvoiceLine['unit']; value: Fraction } {
  if (line.type === 'manual') return { quantity: '1', unit: 'item', value: parseDecimal(trimZeros(line.amount!)) };
  if (line.type === 'flat') {
    const days = BigInt(statement.billableDays);
    return {
      quantity: String(days),
      unit: 'day',
      value: times(parseDecimal(trimZeros(line.amount!)), fraction(days, periodDays)),
    };
  }
  const unitPrice = parseDecimal(trimZeros(line.unitPrice!));
  let billed = BigInt(deviceDays!);
  if (line.type === 'included-overage') {
    billed -= BigInt(line.includedQuantity!) * BigInt(statement.billableDays);
    if (billed < 0n) billed = 0n;
  }
  return { quantity: String(billed), unit: 'device-day', value: times(unitPrice, fraction(billed, periodDays)) };
}

/** The device-days of the devices a line narrows to (its site, OS type, role or static group). */
function countedDays(line: ContractLineRow, devices: StatementDevice[], groupMembers: Map<string, Set<string>>) {
  const group = line.groupId ? groupMembers.get(line.groupId) : undefined;
  return devices
    .filter(
      (d) =>
        (!line.siteId || d.siteId === line.siteId) &&
        (!line.osType || d.osType?.toLowerCase() === line.osType.toLowerCase()) &&
        (!line.role || d.role === line.role) &&
        (!line.groupId || group?.has(d.deviceId)),
    )
    .reduce((sum, d) => sum + d.days, 0);
}

/** Sums of rounded line figures, as decimal strings. */
export function totals(lines: Pick<InvoiceLine, 'amount' | 'tax'>[], digits: number) {
  const sum = (pick: (line: Pick<InvoiceLine, 'amount' | 'tax'>) => string) =>
    lines.reduce((total, line) => total + toMinor(parseDecimal(pick(line)), digits), 0n);
  const subtotal = sum((l) => l.amount);
  const tax = sum((l) => l.tax);
  return {
    subtotal: formatMinor(subtotal, digits),
    tax: formatMinor(tax, digits),
    total: formatMinor(subtotal + tax, digits),
  };
}

/** A credit note's lines: the invoice's, negated. */
export function negatedLines(lines: InvoiceLine[]): InvoiceLine[] {
  const negate = (text: string) => (text.startsWith('-') ? text.slice(1) : /^0(\.0*)?$/.test(text) ? text : `-${text}`);
  return lines.map((line) => ({
    ...line,
    source: { ...line.source, type: 'credit' },
    amount: negate(line.amount),
    tax: negate(line.tax),
    total: negate(line.total),
  }));
}
