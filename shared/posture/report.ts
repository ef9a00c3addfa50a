import { csvRecord, type ExportFile, type FileDelivery } from '../audit/export.ts';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { reachableOrganization } from '../hierarchy/organizations.ts';
import type { PostureCategory, PostureStatus } from './catalog.ts';
import { type ReportScope, selectCoverage, selectPostureDevices, selectProductCounts } from './store.ts';

/** seed 8: a CSV download holds at most 10,000 rows, like an audit export. */
const maxCsvRows = 10_000;

/** The scope of a report: every organization in reach, or one (another tenant's: 404, never named). */
async function reportScope(db: Db, principal: Principal, orgId: string | undefined) {
  if (orgId) await reachableOrganization(db, principal, orgId, 'devices:read');
  else requirePermission(principal, 'devices:read');
  return orgId ?? null;
}

const csvFile = (name: string, header: readonly string[], rows: readonly (string | number | null)[][]): ExportFile => ({
  filename: `${name}-${new Date().toISOString().replace(/[-:]|\.\d+/g, '')}.csv`,
  contentType: 'text/csv; charset=utf-8',
  body: [csvRecord(header), ...rows.map(csvRecord), ''].join('\r\n'),
});

/**
 * GET /reports/management-posture (issue 18): coverage in four disjoint populations (never scanned, stale, clean,
 * with a detection) and per detected product the devices active and installed; `?format=csv` the product rows
 * with the coverage as rows of their own.
 */
export async function postureReport<R>(
  db: Db,
  principal: Principal,
  query: { orgId?: string; category?: PostureCategory; staleDays: number; format: 'json' | 'csv' },
  delivery: FileDelivery<R>,
) {
  const scope = { orgId: await reportScope(db, principal, query.orgId), staleDays: query.staleDays };
  const filter = { ...scope, category: query.category ?? null };
  const [coverage, products] = await Promise.all([
    selectCoverage(db, principal, filter),
    selectProductCounts(db, principal, filter),
  ]);
  const report = {
    generatedAt: new Date().toISOString(),
    staleDays: query.staleDays,
    category: query.category ?? null,
    coverage,
    products,
  };
  if (query.format === 'json') return report;
  // Coverage rows first (category `coverage`, the population as the product), then each product's statuses.
  const rows = [
    ...Object.entries(coverage).map(([population, n]) => ['coverage', population, null, n]),
    ...products.flatMap((p) => [
      [p.category, p.product, 'active', p.active],
      [p.category, p.product, 'installed', p.installed],
      [p.category, p.product, 'stale', p.stale],
    ]),
  ];
  return delivery.deliver(csvFile('management-posture', ['category', 'product', 'status', 'devices'], rows));
}

/** GET /reports/management-posture/devices: the devices behind one product and status, paged; CSV up to 10,000. */
export async function postureDevices<R>(
  db: Db,
  principal: Principal,
  query: Page & { product: string; status: PostureStatus; orgId?: string; staleDays: number; format: 'json' | 'csv' },
  delivery: FileDelivery<R>,
) {
  const filter: ReportScope & { product: string; status: PostureStatus } = {
    orgId: await reportScope(db, principal, query.orgId),
    staleDays: query.staleDays,
    product: query.product,
    status: query.status,
  };
  const csv = query.format === 'csv';
  const page = await selectPostureDevices(db, principal, filter, csv ? { page: 1, limit: maxCsvRows } : query);
  if (!csv) return page;
  const columns = [
    'deviceId',
    'orgId',
    'siteId',
    'hostname',
    'category',
    'product',
    'version',
    'status',
    'collectedAt',
    'stale',
  ] as const;
  return delivery.deliver(
    csvFile(
      'management-posture-devices',
      columns,
      page.data.map((row) =>
        columns.map((c) => {
          const value = row[c];
          return value instanceof Date ? value.toISOString() : typeof value === 'boolean' ? String(value) : value;
        }),
      ),
    ),
  );
}
