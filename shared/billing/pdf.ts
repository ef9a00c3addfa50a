import type { InvoiceView } from './invoices.ts';

export interface PdfParties {
  /** The partner as its billing profile names it (its name when it has none). */
  partner: { name: string; address: string | null; logo: string | null; taxId: string | null };
  organization: { name: string };
}

/**
 * The invoice as a PDF (pdfkit, with its built-in Helvetica, so no font file ships): the partner's logo, name,
 * address and tax id, the customer, number and dates, one row per line and the totals. pdfkit is imported on first
 * use, so a bundle's cold start does not load it for the routes that render no PDF.
 */
export async function invoicePdf(invoice: InvoiceView, parties: PdfParties): Promise<Buffer> {
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: title(invoice), Producer: 'Logbook' } });
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  const { partner } = parties;
  if (partner.logo) {
    const data = Buffer.from(partner.logo.slice(partner.logo.indexOf(',') + 1), 'base64');
    try {
      doc.image(data, 50, 45, { fit: [120, 60] });
    } catch {
      // A logo pdfkit cannot read is left out; the invoice is still rendered.
    }
  }
  doc.fontSize(16).font('Helvetica-Bold').text(partner.name, 200, 50, { align: 'right' });
  doc.fontSize(9).font('Helvetica');
  if (partner.address) doc.text(partner.address, { align: 'right' });
  if (partner.taxId) doc.text(`Tax id: ${partner.taxId}`, { align: 'right' });
  doc.moveDown(2).fontSize(18).font('Helvetica-Bold').text(title(invoice), 50);
  doc.fontSize(10).font('Helvetica');
  doc.text(`Bill to: ${parties.organization.name}`);
  doc.text(`Period: ${invoice.periodStart} to ${invoice.periodEnd}`);
  if (invoice.issueDate) doc.text(`Issue date: ${invoice.issueDate}`);
  if (invoice.dueDate) doc.text(`Due date: ${invoice.dueDate}`);
  if (invoice.status === 'void') doc.text(`VOID: ${invoice.voidReason ?? ''}`);
  doc.moveDown();
  const columns = [50, 300, 380, 450, 500];
  const row = (cells: string[], bold = false) => {
    const y = doc.y;
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica');
    for (const [i, cell] of cells.entries())
      doc.text(cell, columns[i]!, y, {
        width: (columns[i + 1] ?? 545) - columns[i]! - 5,
        align: i === 0 ? 'left' : 'right',
      });
    doc.moveDown(0.5);
  };
  row(['Description', 'Quantity', 'Amount', 'Tax', 'Total'], true);
  for (const line of invoice.lines)
    row([line.description, `${line.quantity} ${line.unit}`, line.amount, line.tax, line.total]);
  doc.moveDown();
  row(['Subtotal', '', '', '', `${invoice.subtotal} ${invoice.currency}`]);
  row(['Tax', '', '', '', `${invoice.tax} ${invoice.currency}`]);
  row(['Total', '', '', '', `${invoice.total} ${invoice.currency}`], true);
  if (invoice.chainHead)
    doc
      .moveDown()
      .fontSize(7)
      .text(
        `Usage verified against audit chain seq ${invoice.chainHead.seq}, checksum ${invoice.chainHead.checksum}`,
        50,
      );
  doc.end();
  return done;
}

const title = (invoice: InvoiceView) =>
  `${invoice.kind === 'credit' ? 'Credit note' : 'Invoice'} ${invoice.number ?? '(draft)'}`;
