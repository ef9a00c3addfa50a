import { randomUUID } from 'node:crypto';
import { type AuditContext, auditChange, type RouteEvent } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { selectOrganization } from '../auth/store.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import { InvalidState, NotFound, ValidationFailed } from '../errors.ts';
import { reachableContract, requireBilling } from './contracts.ts';
import { formatMinor, minorDigitsOf, minorOf } from './money.ts';
import { addDays, type Period, periodContaining, periodStartingOn } from './periods.ts';
import { negatedLines, priceLines, totals } from './pricing.ts';
import type { ListInvoicesQuery } from './schemas.ts';
import * as store from './store.ts';
import { usageStatement } from './usage.ts';

/** The period of a contract starting on this day, or a 400 naming the field that gave it. */
export function contractPeriod(contract: store.ContractRow, start: string, path: string): Period {
  const period = periodStartingOn(contract.startDate, contract.intervalMonths, start);
  const refuse = (message: string) => ValidationFailed(message, [{ path, message, code: 'custom' }]);
  if (!period) {
    const near = periodContaining(
      contract.startDate,
      contract.intervalMonths,
      start < contract.startDate ? contract.startDate : start,
    );
    throw refuse(`No period of the contract starts on ${start}; the nearest starts on ${near.start}`);
  }
  if (contract.endDate && period.start > contract.endDate)
    throw refuse(`The contract ends on ${contract.endDate}, before this period`);
  return period;
}

/** The figures of a period as they stand now: its usage statement and the priced lines. */
export async function computePeriod(
  db: Db,
  contract: store.ContractRow,
  period: Period,
  invoiceId: string | null,
  terms?: store.ContractTerms,
) {
  const { lines, pauses } = terms ?? (await store.selectTerms(db, contract.id));
  const statement = await usageStatement(db, contract, period, pauses, invoiceId);
  const groupMembers = new Map<string, Set<string>>();
  for (const line of lines)
    if (line.groupId && !groupMembers.has(line.groupId))
      groupMembers.set(line.groupId, new Set(await store.selectGroupDeviceIds(db, contract.orgId, line.groupId)));
  const priced = priceLines({
    lines,
    statement,
    taxRatePercent: contract.taxRatePercent,
    currency: contract.currency,
    groupMembers,
    billedManualLines: lines.some((line) => line.type === 'manual')
      ? await store.selectBilledManualLines(db, contract.id, period.start)
      : new Set<string>(),
  });
  return { periodStart: period.start, periodEnd: period.end, currency: contract.currency, ...priced, usage: statement };
}

/** What the period would bill now, stored nowhere (billing:read). By default the period holding today. */
export async function estimateInvoice(db: Db, principal: Principal, contractId: string, start: string | undefined) {
  const contract = await reachableContract(db, principal, contractId, 'read');
  const day = start ?? (await store.selectToday(db, contract.timezone));
  const period = start
    ? contractPeriod(contract, start, 'query.period')
    : periodContaining(
        contract.startDate,
        contract.intervalMonths,
        day < contract.startDate ? contract.startDate : day,
      );
  const figures = await computePeriod(db, contract, period, null);
  return {
    contractId,
    periodStart: figures.periodStart,
    periodEnd: addDays(figures.periodEnd, -1),
    currency: figures.currency,
    lines: figures.lines,
    subtotal: figures.subtotal,
    tax: figures.tax,
    total: figures.total,
  };
}

export const invoiceResource = (invoice: { id: string; number: string | null; periodStart: string; kind: string }) => ({
  resourceType: 'invoice',
  resourceId: invoice.id,
  resourceName: invoice.number ?? `${invoice.kind} draft for ${invoice.periodStart}`,
});

/**
 * Generates the invoice of a period (billing:manage), idempotently: the contract is locked, the period's live invoice
 * looked up, and only then one inserted, in one transaction, so concurrent generates of a period make one invoice. A
 * draft is recomputed by each generate; an issued invoice is returned unchanged. Audited as invoice.generate when a
 * draft is created or its figures change.
 */
export async function generateInvoice(
  db: Db,
  principal: Principal,
  contractId: string,
  periodStart: string,
  audit: AuditContext,
) {
  const found = await reachableContract(db, principal, contractId, 'manage');
  const period = contractPeriod(found, periodStart, 'body.periodStart');
  const id = await db.transaction(async (tx) => {
    const contract = (await store.lockContract(tx, contractId))!;
    if (contract.status === 'draft') throw InvalidState('A draft contract bills nothing; activate it first');
    return generateLocked(tx, contract, period, audit);
  });
  return invoiceView((await store.selectInvoice(db, id))!);
}

/**
 * Records a change's audit event in its transaction, or, given a list, adds it there: the daily run writes the
 * events of all the periods it bills for a contract at once, in the same transaction.
 */
async function record(tx: Tx, audit: AuditContext | RouteEvent[], event: RouteEvent) {
  if (Array.isArray(audit)) audit.push(event);
  else await auditChange(tx, audit, event);
}

/**
 * The generate inside a transaction holding the contract's lock: also the daily run's, which reads the contract's
 * terms and its periods' invoices once for all the periods it catches up (`known`). Answers the invoice's id.
 */
export async function generateLocked(
  tx: Tx,
  contract: store.ContractRow,
  period: Period,
  audit: AuditContext | RouteEvent[],
  known?: { terms: store.ContractTerms; invoices: Map<string, store.InvoiceRow> },
) {
  const contractId = contract.id;
  const terms = known?.terms;
  const existing = known
    ? known.invoices.get(period.start)
    : await store.selectPeriodInvoice(tx, contractId, period.start);
  if (existing && existing.status !== 'draft') return existing.id;
  const figures = await computePeriod(tx, contract, period, existing?.id ?? null, terms);
  const id = existing?.id ?? randomUUID();
  figures.usage.invoiceId = id;
  if (existing) {
    // A generate that changes nothing is no change to audit.
    if (!(await store.updateDraftFigures(tx, id, figures))) return id;
  } else await store.insertInvoice(tx, id, contract, figures);
  await record(tx, audit, {
    orgId: contract.orgId,
    action: 'invoice.generate',
    ...invoiceResource({ id, number: null, periodStart: period.start, kind: 'invoice' }),
    details: {
      contractId,
      periodStart: period.start,
      recomputed: Boolean(existing),
      subtotal: figures.subtotal,
      tax: figures.tax,
      total: figures.total,
      chainHead: figures.usage.chainHead,
    },
  });
  return id;
}

/** The invoice if the principal may read it: an organization's users only their own organization's issued ones. */
async function readableInvoice(db: Db, principal: Principal, id: string) {
  const invoice = await store.selectInvoice(db, id);
  if (!invoice || !(await selectOrganization(db, principal, invoice.orgId))) throw NotFound('Invoice');
  if (principal.scope === 'organization') {
    if (invoice.status !== 'issued') throw NotFound('Invoice');
    requirePermission(principal, 'orgs:read');
  } else requireBilling(principal, 'read');
  return invoice;
}

async function manageableInvoice(db: Db, principal: Principal, id: string) {
  const invoice = await store.selectInvoice(db, id);
  if (!invoice || !(await selectOrganization(db, principal, invoice.orgId))) throw NotFound('Invoice');
  requireBilling(principal, 'manage');
  return invoice;
}

export async function readInvoice(db: Db, principal: Principal, id: string) {
  return readableInvoice(db, principal, id);
}

export async function getUsageStatement(db: Db, principal: Principal, id: string) {
  const invoice = await readableInvoice(db, principal, id);
  return (await store.selectUsage(db, invoice.id))!;
}

export async function listInvoices(db: Db, principal: Principal, query: ListInvoicesQuery) {
  const orgScope = principal.scope === 'organization';
  if (orgScope) requirePermission(principal, 'orgs:read');
  else requireBilling(principal, 'read');
  const result = await store.selectInvoices(db, principal, { ...query, issuedOnly: orgScope }, query);
  return { data: result.data.map(invoiceView), pagination: result.pagination };
}

/** Issue date, due date and the year's next number, in the contract's billing time zone. */
async function numbering(tx: Db, invoice: store.InvoiceRow, paymentTermsDays: number) {
  const issueDate = await store.selectToday(tx, invoice.timezone);
  const year = Number(issueDate.slice(0, 4));
  const next = await store.nextInvoiceNumber(tx, invoice.partnerId, year);
  return {
    number: `${year}-${String(next).padStart(6, '0')}`,
    issueDate,
    dueDate: addDays(issueDate, paymentTermsDays),
  };
}

/**
 * Issues a draft (billing:manage): it is frozen and numbered from the partner's counter of the issue year, locked in
 * this transaction, so numbers have no gaps and none is taken twice. Issuing an issued invoice answers it unchanged.
 */
export async function issueInvoice(db: Db, principal: Principal, id: string, audit: AuditContext) {
  await manageableInvoice(db, principal, id);
  await db.transaction((tx) => issueLocked(tx, id, audit));
  return invoiceView((await store.selectInvoice(db, id))!);
}

export async function issueLocked(tx: Tx, id: string, audit: AuditContext | RouteEvent[]) {
  const invoice = (await store.lockInvoice(tx, id))!;
  if (invoice.status === 'issued') return;
  if (invoice.status === 'void') throw InvalidState('A void invoice is not issued');
  const contract = (await store.selectContract(tx, invoice.contractId))!;
  const issue = await numbering(tx, invoice, contract.paymentTermsDays);
  await store.updateInvoiceIssued(tx, id, issue);
  await record(tx, audit, {
    orgId: invoice.orgId,
    action: 'invoice.issue',
    ...invoiceResource({ ...invoice, number: issue.number }),
    details: { contractId: invoice.contractId, periodStart: invoice.periodStart, total: invoice.total, ...issue },
  });
}

/**
 * Voids an invoice with a reason (billing:manage). A draft is simply void; an issued invoice keeps its number (never
 * reused) and is cancelled by a credit note, issued and numbered at once, that references it (invoice.credit).
 */
export async function voidInvoice(db: Db, principal: Principal, id: string, reason: string, audit: AuditContext) {
  await manageableInvoice(db, principal, id);
  await db.transaction(async (tx) => {
    const invoice = (await store.lockInvoice(tx, id))!;
    if (invoice.status === 'void') throw InvalidState('The invoice is void already');
    if (invoice.kind === 'credit') throw InvalidState('A credit note is not voided');
    await store.updateInvoiceVoid(tx, id, reason);
    await auditChange(tx, audit, {
      orgId: invoice.orgId,
      action: 'invoice.void',
      ...invoiceResource(invoice),
      details: { reason, before: { status: invoice.status }, after: { status: 'void' } },
    });
    if (invoice.status !== 'issued') return;
    const digits = minorDigitsOf(invoice.currency);
    const lines = negatedLines(invoice.lines);
    const issue = await numbering(tx, invoice, 0);
    const creditId = await store.insertCreditNote(tx, invoice, { ...totals(lines, digits), lines, ...issue });
    await auditChange(tx, audit, {
      orgId: invoice.orgId,
      action: 'invoice.credit',
      ...invoiceResource({ id: creditId, number: issue.number, periodStart: invoice.periodStart, kind: 'credit' }),
      details: { creditsInvoiceId: id, creditsNumber: invoice.number, reason, total: totals(lines, digits).total },
    });
  });
  return invoiceView((await store.selectInvoice(db, id))!);
}

/** An invoice as replies show it: amounts with exactly the currency's digits, the period's last day. */
export function invoiceView(row: store.InvoiceRow) {
  const digits = minorDigitsOf(row.currency);
  const money = (text: string) => formatMinor(minorOf(text, digits), digits);
  return {
    id: row.id,
    contractId: row.contractId,
    orgId: row.orgId,
    partnerId: row.partnerId,
    kind: row.kind,
    status: row.status,
    number: row.number,
    periodStart: row.periodStart,
    periodEnd: addDays(row.periodEndExclusive, -1),
    currency: row.currency,
    subtotal: money(row.subtotal),
    tax: money(row.tax),
    total: money(row.total),
    lines: row.lines,
    chainHead: row.chainHeadSeq === null ? null : { seq: Number(row.chainHeadSeq), checksum: row.chainHeadChecksum! },
    issueDate: row.issueDate,
    dueDate: row.dueDate,
    issuedAt: row.issuedAt,
    creditsInvoiceId: row.creditsInvoiceId,
    creditNoteId: row.creditNoteId,
    voidReason: row.voidReason,
    voidedAt: row.voidedAt,
    generatedAt: row.generatedAt,
  };
}
export type InvoiceView = ReturnType<typeof invoiceView>;
