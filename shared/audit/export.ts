import type { Principal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { configuredAnchorPublicKey, publicKeyPem } from './anchor-signing.ts';
import { selectLatestAnchors } from './anchor-store.ts';
import { canonicalFields } from './canonical.ts';
import { readableScope } from './query.ts';
import { type AuditFilters, type ExportCursor, selectExportPage } from './read-store.ts';
import type { AuditRow } from './row.ts';
import { type ChainEvidence, selectAnchoredRecord, selectChainHeads, selectLatestCheckpoints } from './store.ts';
import { type AuditContext, writeRouteAudit } from './writer.ts';

/** An export holds at most 10,000 rows. */
export const maxExportRows = 10_000;
/** Rows per query, and bytes per result under the Data API's 1 MiB (docs/ARCHITECTURE.md). */
const pageRows = 1_000;
const pageBytes = 900_000;

/** The columns of an exported row: the canonical payload's fields in their order, then the checksum. */
export const exportColumns = [...canonicalFields, 'checksum'] as const satisfies readonly (keyof AuditRow)[];

export type ExportFormat = 'csv' | 'json';

/** An exported file, before it travels. */
export interface ExportFile {
  filename: string;
  contentType: string;
  body: string;
}

/**
 * Where a finished file goes (shared/http/download.ts makes it an HTTP reply): the most text it can carry, the
 * refusal of more, and the delivery, which may refuse too. The export is recorded only once the file is delivered.
 */
export interface FileDelivery<R> {
  maxBytes: number;
  tooLarge(): Error;
  deliver(file: ExportFile): R;
}

/**
 * GET /audit-logs/export: the newest rows in scope (at most 10,000) with every canonical value of the chain,
 * so a JSON export of an unfiltered range verifies offline (shared/audit/canonical.ts). Read in keyset pages
 * from one REPEATABLE READ snapshot, so a write during the export neither shifts nor repeats rows. Each
 * organization whose rows leave is told so in its own trail (data.export). A JSON export also carries
 * each exported organization's chain head from the same snapshot (`heads`), to compare with the live chain.
 */
export async function exportAuditLogs<R>(
  db: Db,
  principal: Principal,
  audit: AuditContext,
  query: AuditFilters & { format: ExportFormat },
  delivery: FileDelivery<R>,
): Promise<R> {
  const { format, ...filters } = query;
  const scope = readableScope(principal, filters);
  const encode = (row: AuditRow) =>
    format === 'csv'
      ? csvRecord(exportColumns.map((column) => row[column]))
      : JSON.stringify(Object.fromEntries(exportColumns.map((column) => [column, row[column]])));
  const { records, rowsPerOrg, heads, evidence } = await db.transaction(
    async (tx) => {
      const records: string[] = [];
      const rowsPerOrg = new Map<string, number>();
      let bytes = 0;
      let after: ExportCursor | undefined;
      while (records.length < maxExportRows) {
        const page = await selectExportPage(tx, scope, {
          after,
          rows: Math.min(pageRows, maxExportRows - records.length),
          bytes: pageBytes,
        });
        if (page.length === 0) break;
        for (const row of page) {
          const record = encode(row);
          records.push(record);
          bytes += Buffer.byteLength(record) + 2;
          rowsPerOrg.set(row.orgId, (rowsPerOrg.get(row.orgId) ?? 0) + 1);
        }
        // Reading stops as soon as the file cannot fit its delivery any more.
        if (bytes > delivery.maxBytes) throw delivery.tooLarge();
        after = page.at(-1);
      }
      // The heads of the same snapshot: what the file's newest rows must match, and what to compare with the live chain;
      // and the signed evidence the offline check applies like the database verifier.
      const orgIds = [...rowsPerOrg.keys()];
      const heads = format === 'json' ? await selectChainHeads(tx, orgIds) : {};
      const evidence = format === 'json' ? await readExportEvidence(tx, orgIds) : {};
      return { records, rowsPerOrg, heads, evidence };
    },
    { isolation: 'REPEATABLE READ' },
  );

  const exportedAt = new Date().toISOString();
  const filename = `audit-logs-${exportedAt.replace(/[-:]|\.\d+/g, '')}.${format}`;
  const body =
    format === 'csv'
      ? [csvRecord(exportColumns), ...records, ''].join('\r\n')
      : `{"exportedAt":${JSON.stringify(exportedAt)},"filters":${JSON.stringify(filters)},"heads":${JSON.stringify(heads)},` +
        `"publicKey":${JSON.stringify(publishedKey())},"evidence":${JSON.stringify(evidence)},"rows":[${records.join(',')}]}`;
  const delivered = delivery.deliver({
    body,
    contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json',
    filename,
  });

  // An empty export is still recorded for an organization user's own organization.
  const recorded =
    rowsPerOrg.size === 0 && principal.scope === 'organization' && principal.orgId
      ? new Map([[principal.orgId, 0]])
      : rowsPerOrg;
  for (const [orgId, rowCount] of recorded) {
    writeRouteAudit(audit, {
      orgId,
      action: 'data.export',
      resourceType: 'audit_log',
      resourceName: filename,
      details: { format, filters, rowCount, exportRowCount: records.length },
    });
  }
  return delivered;
}

/** The anchor key's public half, as GET /audit-logs/anchors publishes it; null when none is configured. */
function publishedKey(): string | null {
  const key = configuredAnchorPublicKey();
  return key ? publicKeyPem(key) : null;
}

/** Per organization: its latest retention checkpoint (with the worker's signature), newest anchor, anchored record. */
async function readExportEvidence(db: Db, orgIds: readonly string[]): Promise<Record<string, ChainEvidence>> {
  const checkpoints = await selectLatestCheckpoints(db, orgIds);
  const anchors = await selectLatestAnchors(db, orgIds);
  const evidence: Record<string, ChainEvidence> = {};
  for (const orgId of orgIds) {
    const anchoredRecordSeq = await selectAnchoredRecord(db, orgId);
    evidence[orgId] = {
      checkpoint: checkpoints[orgId] ?? null,
      anchor: anchors.get(orgId) ?? null,
      anchoredRecordSeq: anchoredRecordSeq ?? null,
    };
  }
  return evidence;
}

/**
 * One CSV record (RFC 4180): a field holding a comma, quote, CR or LF is quoted, quotes doubled. A null is an
 * empty field, an empty string "" (as PostgreSQL's COPY reads CSV). Against formula injection a field starting
 * with = + - @ tab, CR or ' gets a leading ' (reversible: a reader drops one leading ').
 */
/** A report's rows as a CSV attachment named after the report and the time (a header row first). */
export const csvFile = (
  name: string,
  header: readonly string[],
  rows: readonly (string | number | null)[][],
): ExportFile => ({
  filename: `${name}-${new Date().toISOString().replace(/[-:]|\.\d+/g, '')}.csv`,
  contentType: 'text/csv; charset=utf-8',
  body: [csvRecord(header), ...rows.map(csvRecord), ''].join('\r\n'),
});

export function csvRecord(values: readonly (string | number | null)[]): string {
  return values
    .map((value) => {
      if (value === null) return '';
      const text = /^[=+\-@\t\r']/.test(String(value)) ? `'${value}` : String(value);
      return text === '' || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
    })
    .join(',');
}
