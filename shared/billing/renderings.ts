import type { InvoiceView } from './invoices.ts';
import type { UsageStatement } from './schemas.ts';

/**
 * RFC 4180 text: a field holding a comma, quote or line break is quoted, quotes doubled. Against formula injection a
 * text starting with = + - @ tab or CR gets a leading '; a negative amount (`-12.50`) is a number and stays as it is,
 * so accounting tools read credit notes.
 */
export function csvText(rows: readonly (readonly (string | number | null)[])[]): string {
  const field = (value: string | number | null) => {
    if (value === null) return '';
    let text = String(value);
    if (/^[=+@\t\r]/.test(text) || (text.startsWith('-') && !/^-\d+(\.\d+)?$/.test(text))) text = `'${text}`;
    return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  return `${rows.map((row) => row.map(field).join(',')).join('\r\n')}\r\n`;
}

/** An invoice as CSV: one row per line, with the invoice's number, status and totals on each. */
export function invoiceCsv(invoice: InvoiceView): string {
  const header = [
    'invoiceId',
    'number',
    'kind',
    'status',
    'currency',
    'position',
    'source',
    'contractLineId',
    'lineType',
    'description',
    'periodStart',
    'periodEnd',
    'periodDays',
    'billableDays',
    'deviceDays',
    'includedQuantity',
    'quantity',
    'unit',
    'unitPrice',
    'amount',
    'taxRatePercent',
    'tax',
    'total',
    'invoiceSubtotal',
    'invoiceTax',
    'invoiceTotal',
  ];
  const rows = invoice.lines.map((line) => [
    invoice.id,
    invoice.number,
    invoice.kind,
    invoice.status,
    invoice.currency,
    line.position,
    line.source.type,
    line.source.contractLineId,
    line.source.lineType,
    line.description,
    line.periodStart,
    line.periodEnd,
    line.periodDays,
    line.billableDays,
    line.deviceDays,
    line.includedQuantity,
    line.quantity,
    line.unit,
    line.unitPrice,
    line.amount,
    line.taxRatePercent,
    line.tax,
    line.total,
    invoice.subtotal,
    invoice.tax,
    invoice.total,
  ]);
  return csvText([header, ...rows]);
}

/** The statement as CSV: one row per device, then the period's figures and the chain head as `#name,value` rows. */
export function statementCsv(statement: UsageStatement): string {
  const header = [
    'deviceId',
    'hostname',
    'siteId',
    'osType',
    'role',
    'enrolledAt',
    'deletedAt',
    'firstDay',
    'lastDay',
    'days',
    'createSeq',
    'deleteSeq',
  ];
  const rows = statement.devices.map((d) => [
    d.deviceId,
    d.hostname,
    d.siteId,
    d.osType,
    d.role,
    d.enrolledAt,
    d.deletedAt,
    d.firstDay,
    d.lastDay,
    d.days,
    d.createSeq,
    d.deleteSeq,
  ]);
  const summary: [string, string | number | null][] = [
    ['#invoiceId', statement.invoiceId],
    ['#contractId', statement.contractId],
    ['#orgId', statement.orgId],
    ['#periodStart', statement.periodStart],
    ['#periodEnd', statement.periodEnd],
    ['#timezone', statement.timezone],
    ['#periodDays', statement.periodDays],
    ['#billableDays', statement.billableDays],
    ['#deviceDays', statement.deviceDays],
    ['#chainHeadSeq', statement.chainHead?.seq ?? null],
    ['#chainHeadChecksum', statement.chainHead?.checksum ?? null],
  ];
  return csvText([header, ...rows, ...summary]);
}

type Exported = InvoiceView & { orgName: string };

/**
 * Xero's sales invoice import (Business → Invoices → Import): one row per line. Each line goes in as quantity 1 at
 * its rounded amount, so Xero's own multiplication gives exactly our figures; our quantity and unit price are in the
 * description. Credit notes go in with negative amounts (Xero makes them credit notes). AccountCode 200 is Xero's
 * default Sales account; TaxType names Xero's standard rates.
 */
export function xeroCsv(invoices: Exported[]): string {
  const header = [
    '*ContactName',
    '*InvoiceNumber',
    'Reference',
    '*InvoiceDate',
    '*DueDate',
    '*Description',
    '*Quantity',
    '*UnitAmount',
    '*AccountCode',
    '*TaxType',
    'TaxAmount',
    'Currency',
  ];
  const rows = invoices.flatMap((invoice) =>
    invoice.lines.map((line) => [
      invoice.orgName,
      invoice.number,
      reference(invoice),
      invoice.issueDate,
      invoice.dueDate,
      lineText(line),
      '1',
      line.amount,
      '200',
      line.taxable ? 'Tax on Sales' : 'Tax Exempt',
      line.tax,
      invoice.currency,
    ]),
  );
  return csvText([header, ...rows]);
}

/**
 * QuickBooks Online's invoice import (Sales → Import invoices): one row per line, the invoice's fields repeated; as
 * for Xero each line is quantity 1 at its rounded amount, the tax given as an amount.
 */
export function quickBooksCsv(invoices: Exported[]): string {
  const header = [
    'InvoiceNo',
    'Customer',
    'InvoiceDate',
    'DueDate',
    'Memo',
    'Item(Product/Service)',
    'ItemDescription',
    'ItemQuantity',
    'ItemRate',
    'ItemAmount',
    'ItemTaxAmount',
    'Taxable',
    'Currency',
    'ServiceDate',
  ];
  const rows = invoices.flatMap((invoice) =>
    invoice.lines.map((line) => [
      invoice.number,
      invoice.orgName,
      invoice.issueDate,
      invoice.dueDate,
      reference(invoice),
      line.source.lineType === 'manual' ? 'Services' : 'Managed devices',
      lineText(line),
      '1',
      line.amount,
      line.amount,
      line.tax,
      line.taxable ? 'Y' : 'N',
      invoice.currency,
      line.periodStart,
    ]),
  );
  return csvText([header, ...rows]);
}

const reference = (invoice: Exported) =>
  invoice.kind === 'credit'
    ? `Credit note for ${invoice.creditsInvoiceId}`
    : `Period ${invoice.periodStart} to ${invoice.periodEnd}`;

const lineText = (line: InvoiceView['lines'][number]) =>
  `${line.description} (${line.quantity} ${line.unit}${line.quantity === '1' ? '' : 's'} × ${line.unitPrice}, ${line.periodStart} to ${line.periodEnd})`;
