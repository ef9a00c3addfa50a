import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { requireBilling } from './contracts.ts';
import { getUsageStatement, invoiceView, readInvoice } from './invoices.ts';
import { invoicePdf } from './pdf.ts';
import { issuerOf } from './profile.ts';
import { invoiceCsv, quickBooksCsv, statementCsv, xeroCsv } from './renderings.ts';
import * as store from './store.ts';

/** A file for download: the adapter makes it an attachment. */
export interface BillingFile {
  filename: string;
  contentType: string;
  body: string | Buffer;
}

const fileName = (invoice: { number: string | null; id: string }) => invoice.number ?? `draft-${invoice.id}`;

/** An invoice as JSON, CSV or PDF, to whoever may read it. */
export async function invoiceDocument(
  db: Db,
  principal: Principal,
  id: string,
  format: 'json' | 'csv' | 'pdf' = 'json',
) {
  const invoice = invoiceView(await readInvoice(db, principal, id));
  if (format === 'json') return invoice;
  if (format === 'csv')
    return {
      filename: `invoice-${fileName(invoice)}.csv`,
      contentType: 'text/csv; charset=utf-8',
      body: invoiceCsv(invoice),
    };
  const [partner, organization] = await Promise.all([
    issuerOf(db, invoice.partnerId),
    db.query<{ name: string }>('SELECT name FROM organizations WHERE id = :id::uuid', { id: invoice.orgId }),
  ]);
  return {
    filename: `invoice-${fileName(invoice)}.pdf`,
    contentType: 'application/pdf',
    body: await invoicePdf(invoice, { partner, organization: { name: organization.rows[0]?.name ?? '' } }),
  };
}

/** An invoice's usage statement as JSON or CSV. */
export async function statementDocument(db: Db, principal: Principal, id: string, format: 'json' | 'csv' = 'json') {
  const statement = await getUsageStatement(db, principal, id);
  if (format === 'json') return statement;
  return {
    filename: `usage-statement-${statement.periodStart}-${id}.csv`,
    contentType: 'text/csv; charset=utf-8',
    body: statementCsv(statement),
  };
}

/**
 * Issued invoices and credit notes of the partners the principal reaches, issued between two days (the issue date is
 * a day in each contract's billing time zone), as Xero or QuickBooks Online import them.
 */
export async function exportInvoices(
  db: Db,
  principal: Principal,
  query: { format: 'xero' | 'quickbooks'; from: string; to: string },
): Promise<BillingFile> {
  requireBilling(principal, 'read');
  const rows = await store.selectIssuedBetween(db, principal, query.from, query.to);
  const invoices = rows.map((row) => ({ ...invoiceView(row), orgName: row.orgName }));
  return {
    filename: `invoices-${query.format}-${query.from}-${query.to}.csv`,
    contentType: 'text/csv; charset=utf-8',
    body: query.format === 'xero' ? xeroCsv(invoices) : quickBooksCsv(invoices),
  };
}
