import { z } from 'zod';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { canonicalTimeZone } from '../hierarchy/schemas.ts';
import { atLeastOneField, optionalParam } from '../request-values.ts';
import { decimalPattern, isCurrency } from './money.ts';
import { isCalendarDate } from './periods.ts';

export const contractStatuses = ['draft', 'active', 'paused', 'cancelled', 'ended'] as const;
export type ContractStatus = (typeof contractStatuses)[number];
export const lineTypes = ['flat', 'per-device', 'per-device-role', 'included-overage', 'manual'] as const;
export type LineType = (typeof lineTypes)[number];
export const deviceRoles = ['workstation', 'server'] as const;
export type DeviceRole = (typeof deviceRoles)[number];
export const invoiceStatuses = ['draft', 'issued', 'void'] as const;
export type InvoiceStatus = (typeof invoiceStatuses)[number];

/** A calendar date, YYYY-MM-DD (a day in the contract's billing time zone). */
export const calendarDate = z
  .string()
  .refine(isCalendarDate, 'Give a calendar date as YYYY-MM-DD')
  .meta({ format: 'date', example: '2026-01-31' });

/** An amount as a decimal string: exact, never a binary floating-point number. */
const decimal = z
  .string()
  .regex(decimalPattern, 'Give a decimal string with at most 12 digits before and 6 after the point, e.g. "4.50"')
  .meta({ example: '4.50' });
const nonNegative = decimal.refine((text) => !text.startsWith('-'), 'Must not be negative');

const timezone = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .transform((zone, ctx) => {
    const canonical = canonicalTimeZone(zone);
    if (!canonical)
      ctx.addIssue({ code: 'custom', message: 'Unknown time zone; give an IANA name such as Europe/Berlin' });
    return canonical ?? zone;
  })
  .meta({ description: 'The billing time zone (IANA): days are counted in it' });

const line = z
  .object({
    type: z.enum(lineTypes),
    description: z.string().trim().min(1).max(500),
    amount: decimal.optional().meta({ description: 'flat: per period; manual: once (may be negative)' }),
    unitPrice: nonNegative
      .optional()
      .meta({ description: 'per-device, per-device-role: per device and period; included-overage: per device beyond' }),
    includedQuantity: z.number().int().min(0).max(10_000_000).optional(),
    groupId: z.uuid().optional(),
    siteId: z.uuid().optional(),
    osType: z.string().trim().min(1).max(50).optional(),
    role: z.enum(deviceRoles).optional(),
    taxable: z.boolean().default(true),
  })
  .strict()
  .superRefine((l, ctx) => {
    const needs = (field: keyof typeof l, when: boolean) => {
      if (when && l[field] === undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `Required for a ${l.type} line` });
      if (!when && l[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `Not taken by a ${l.type} line` });
    };
    const device = l.type !== 'flat' && l.type !== 'manual';
    needs('amount', !device);
    needs('unitPrice', device);
    needs('includedQuantity', l.type === 'included-overage');
    needs('role', l.type === 'per-device-role');
    if (l.type === 'flat' && l.amount?.startsWith('-'))
      ctx.addIssue({ code: 'custom', path: ['amount'], message: 'Must not be negative' });
    for (const field of ['groupId', 'siteId', 'osType'] as const)
      if (!device && l[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `Not taken by a ${l.type} line` });
  });
export type ContractLineInput = z.output<typeof line>;

const taxRatePercent = z
  .union([z.number().min(0).max(100).transform(String), nonNegative])
  .pipe(nonNegative.refine((text) => Number(text) <= 100, 'At most 100'))
  .meta({ description: 'Tax rate in percent (19 means 19 %)' });

const contractFields = {
  currency: z
    .string()
    .refine(isCurrency, 'Give an ISO 4217 currency code in capitals, e.g. EUR')
    .meta({ example: 'EUR' }),
  startDate: calendarDate,
  endDate: calendarDate.meta({ description: 'The last day the contract covers' }),
  intervalMonths: z.union([z.literal(1), z.literal(3), z.literal(12)]),
  billing: z.enum(['advance', 'arrears']),
  timezone,
  paymentTermsDays: z.number().int().min(0).max(365),
  autoRenew: z.boolean(),
  autoIssue: z.boolean(),
  taxRatePercent,
  lines: z.array(line).min(1).max(100),
};

const endAfterStart = (body: { startDate?: string; endDate?: string | null }) =>
  !body.startDate || !body.endDate || body.endDate >= body.startDate;
const endMessage = { message: 'endDate is before startDate', path: ['endDate'] };

export const createContract = z
  .object({
    ...contractFields,
    endDate: contractFields.endDate.optional(),
    status: z.enum(['draft', 'active']).default('active'),
    paymentTermsDays: contractFields.paymentTermsDays.default(14),
    autoRenew: contractFields.autoRenew.default(false),
    autoIssue: contractFields.autoIssue.default(false),
    taxRatePercent: contractFields.taxRatePercent.default('0'),
  })
  .strict()
  .refine(endAfterStart, endMessage);
export type CreateContract = z.output<typeof createContract>;

export const updateContract = atLeastOneField(
  z
    .object({
      endDate: contractFields.endDate.nullable().optional(),
      status: z.literal('active').optional().meta({ description: 'Activates a draft' }),
      paymentTermsDays: contractFields.paymentTermsDays.optional(),
      autoRenew: contractFields.autoRenew.optional(),
      autoIssue: contractFields.autoIssue.optional(),
      taxRatePercent: contractFields.taxRatePercent.optional(),
      lines: contractFields.lines.optional().meta({ description: 'Replaces every line' }),
    })
    .strict(),
);
export type UpdateContract = z.output<typeof updateContract>;

export const contractLine = z
  .object({
    id: z.uuid(),
    type: z.enum(lineTypes),
    description: z.string(),
    amount: z.string().nullable(),
    unitPrice: z.string().nullable(),
    includedQuantity: z.number().int().nullable(),
    groupId: z.uuid().nullable(),
    siteId: z.uuid().nullable(),
    osType: z.string().nullable(),
    role: z.enum(deviceRoles).nullable(),
    taxable: z.boolean(),
  })
  .strict()
  .meta({ id: 'ContractLine' });

const periodReply = z
  .object({ start: z.string(), end: z.string().meta({ description: 'The last day of the period' }) })
  .strict();

export const contract = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    partnerId: z.uuid(),
    currency: z.string(),
    status: z.enum(contractStatuses),
    startDate: z.string(),
    endDate: z.string().nullable(),
    intervalMonths: z.number().int(),
    billing: z.enum(['advance', 'arrears']),
    timezone: z.string(),
    paymentTermsDays: z.number().int(),
    autoRenew: z.boolean(),
    autoIssue: z.boolean(),
    taxRatePercent: z.string(),
    lines: z.array(contractLine),
    pauses: z.array(z.object({ pausedOn: z.string(), resumedOn: z.string().nullable() }).strict()),
    nextPeriod: periodReply.nullable().meta({ description: 'The next period the daily run bills' }),
    nextDueOn: z.string().nullable().meta({ description: 'The day that period falls due' }),
    createdAt: timestampReply,
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'Contract' });

export type Contract = z.output<typeof contract>;

export const contractPage = pageOf(contract);
export const contractParams = z.object({ id: z.uuid() });
export const orgParams = z.object({ id: z.uuid() });
export const listContractsQuery = z.object({ ...pageQuery({ defaultLimit: 50, maxLimit: 200 }) }).strict();
export const contractAction = z.object({}).strict();

export const estimateQuery = z
  .object({
    period: optionalParam(calendarDate).meta({
      description: "A period's start; by default the period holding today in the billing time zone",
    }),
  })
  .strict();

/** One line of an invoice: its source, quantity and amounts. */
export const invoiceLine = z
  .object({
    position: z.number().int(),
    source: z
      .object({
        type: z.enum(['contract-line', 'credit']),
        contractLineId: z.uuid().nullable(),
        lineType: z.enum(lineTypes).nullable(),
      })
      .strict(),
    description: z.string(),
    periodStart: z.string(),
    periodEnd: z.string(),
    periodDays: z.number().int(),
    billableDays: z.number().int(),
    deviceDays: z.number().int().nullable(),
    includedQuantity: z.number().int().nullable(),
    quantity: z.string().meta({ description: 'Device-days (device lines), billable days (flat), 1 (manual)' }),
    unit: z.enum(['device-day', 'day', 'item']),
    unitPrice: z.string(),
    amount: z.string(),
    taxable: z.boolean(),
    taxRatePercent: z.string(),
    tax: z.string(),
    total: z.string(),
  })
  .strict()
  .meta({ id: 'InvoiceLine' });
export type InvoiceLine = z.output<typeof invoiceLine>;

const chainHead = z.object({ seq: z.number().int(), checksum: z.string() }).strict();

export const estimate = z
  .object({
    contractId: z.uuid(),
    periodStart: z.string(),
    periodEnd: z.string(),
    currency: z.string(),
    lines: z.array(invoiceLine),
    subtotal: z.string(),
    tax: z.string(),
    total: z.string(),
  })
  .strict()
  .meta({ id: 'InvoiceEstimate' });
export type Estimate = z.output<typeof estimate>;

export const invoice = z
  .object({
    id: z.uuid(),
    contractId: z.uuid(),
    orgId: z.uuid(),
    partnerId: z.uuid(),
    kind: z.enum(['invoice', 'credit']),
    status: z.enum(invoiceStatuses),
    number: z.string().nullable(),
    periodStart: z.string(),
    periodEnd: z.string().meta({ description: 'The last day of the period' }),
    currency: z.string(),
    subtotal: z.string(),
    tax: z.string(),
    total: z.string(),
    lines: z.array(invoiceLine),
    chainHead: chainHead.nullable(),
    issueDate: z.string().nullable(),
    dueDate: z.string().nullable(),
    issuedAt: timestampReply.nullable(),
    creditsInvoiceId: z.uuid().nullable(),
    creditNoteId: z.uuid().nullable(),
    voidReason: z.string().nullable(),
    voidedAt: timestampReply.nullable(),
    generatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'Invoice' });
export type Invoice = z.output<typeof invoice>;

export const invoicePage = pageOf(invoice);
export const invoiceParams = z.object({ id: z.uuid() });
export const generateInvoice = z.object({ periodStart: calendarDate }).strict();
export const voidInvoice = z.object({ reason: z.string().trim().min(1).max(1000) }).strict();
export const invoiceAction = z.object({}).strict();
export const invoiceFormatQuery = z.object({ format: optionalParam(z.enum(['json', 'csv', 'pdf'])) }).strict();
export const statementFormatQuery = z.object({ format: optionalParam(z.enum(['json', 'csv'])) }).strict();

export const listInvoicesQuery = z
  .object({
    orgId: optionalParam(z.uuid()),
    contractId: optionalParam(z.uuid()),
    status: optionalParam(z.enum(invoiceStatuses)),
    ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  })
  .strict();
export type ListInvoicesQuery = z.output<typeof listInvoicesQuery>;

export const exportQuery = z
  .object({
    format: z.enum(['xero', 'quickbooks']),
    from: calendarDate.meta({ description: 'First issue date, in the billing time zone' }),
    to: calendarDate.meta({ description: 'Last issue date, in the billing time zone' }),
  })
  .strict()
  .refine((q) => q.from <= q.to, { message: 'from is after to', path: ['to'] });

/** One device of a usage statement and the days it counted. */
export const statementDevice = z
  .object({
    deviceId: z.uuid(),
    hostname: z.string(),
    siteId: z.uuid(),
    osType: z.string().nullable(),
    role: z.enum(deviceRoles),
    enrolledAt: z.string(),
    deletedAt: z.string().nullable(),
    firstDay: z.string().nullable(),
    lastDay: z.string().nullable(),
    days: z.number().int(),
    createSeq: z.number().int().nullable().meta({ description: 'The seq of its device.create audit row' }),
    deleteSeq: z.number().int().nullable().meta({ description: 'The seq of its device.delete audit row' }),
  })
  .strict();
export type StatementDevice = z.output<typeof statementDevice>;

export const usageStatement = z
  .object({
    invoiceId: z.uuid().nullable(),
    contractId: z.uuid(),
    orgId: z.uuid(),
    periodStart: z.string(),
    periodEnd: z.string(),
    timezone: z.string(),
    periodDays: z.number().int(),
    billableDays: z.number().int(),
    billableRanges: z.array(z.object({ from: z.string(), to: z.string() }).strict()),
    deviceDays: z.number().int(),
    devices: z.array(statementDevice),
    chainHead: chainHead.nullable(),
    generatedAt: z.string(),
  })
  .strict()
  .meta({ id: 'UsageStatement' });
export type UsageStatement = z.output<typeof usageStatement>;

export const partnerParams = z.object({ partnerId: z.uuid() });
export const billingProfileChange = atLeastOneField(
  z
    .object({
      name: z.string().trim().min(1).max(255).nullable().optional(),
      address: z.string().trim().min(1).max(2000).nullable().optional(),
      logo: z
        .string()
        .max(200_000)
        .regex(/^data:image\/(png|jpeg);base64,[A-Za-z0-9+/]+={0,2}$/, 'Give a data: URL of a PNG or JPEG image')
        .nullable()
        .optional(),
      taxId: z.string().trim().min(1).max(64).nullable().optional(),
    })
    .strict(),
);
export const billingProfile = z
  .object({
    partnerId: z.uuid(),
    name: z.string().nullable(),
    address: z.string().nullable(),
    logo: z.string().nullable(),
    taxId: z.string().nullable(),
    updatedAt: timestampReply,
  })
  .strict()
  .meta({ id: 'BillingProfile' });
