import { csvFile, type FileDelivery } from '../audit/export.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import type { PostureCategory, PostureStatus } from './catalog.ts';
import {
  type CountRow,
  countDevices,
  type ReportScope,
  selectCounts,
  selectPostureDevices,
  selectReportOrganizations,
} from './store.ts';

/** A CSV download holds at most 10,000 rows, like an audit export. */
const maxCsvRows = 10_000;

/** The scope of a report: every organization in reach, or one (another tenant's: 404, never named). */
async function reportScope(db: Db, principal: Principal, orgId: string | undefined) {
  if (orgId) await reachableOrganization(db, principal, orgId, 'devices:read');
  else requirePermission(principal, 'devices:read');
  return orgId ?? null;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The report from the counts per key: coverage from the `scanned` and `detected` keys (in the category, or any),
 * whatever no snapshot counts being never scanned; per product its active and installed current snapshots and its
 * stale ones.
 */
function fromCounts(devices: number, counts: CountRow[], category: PostureCategory | null) {
  const at = (c: string, p: string, s: string) =>
    counts.find((r) => r.category === c && r.product === p && r.status === s) ?? { current: 0, stale: 0 };
  const scanned = at('', '', 'scanned');
  const detected = at(category ?? '', '', 'detected');
  const coverage = {
    devices,
    neverScanned: devices - scanned.current - scanned.stale,
    stale: scanned.stale,
    clean: scanned.current - detected.current,
    withDetection: detected.current,
  };
  const byProduct = new Map<
    string,
    { category: PostureCategory; product: string; active: number; installed: number; stale: number }
  >();
  for (const r of counts) {
    if (r.product === '' || (r.status !== 'active' && r.status !== 'installed')) continue;
    const key = `${r.category}\u0000${r.product}`;
    const row = byProduct.get(key) ?? {
      category: r.category as PostureCategory,
      product: r.product,
      active: 0,
      installed: 0,
      stale: 0,
    };
    row[r.status] += r.current;
    row.stale += r.stale;
    byProduct.set(key, row);
  }
  const products = [...byProduct.values()]
    .filter((p) => p.active + p.installed + p.stale > 0)
    .sort((a, b) => (a.category === b.category ? compare(a.product, b.product) : compare(a.category, b.category)));
  return { coverage, products };
}

/**
 * GET /reports/management-posture: coverage in four disjoint populations (never scanned, stale, clean,
 * with a detection) and per detected product the devices active and installed; `?format=csv` the product rows
 * with the coverage as rows of their own.
 */
export async function postureReport<R>(
  db: Db,
  principal: Principal,
  query: { orgId?: string; category?: PostureCategory; staleDays: number; format: 'json' | 'csv' },
  delivery: FileDelivery<R>,
) {
  const asOf = new Date();
  const orgId = await reportScope(db, principal, query.orgId);
  const organizations = await selectReportOrganizations(db, principal, orgId);
  const orgIds = organizations.map((o) => o.id);
  // One organization (or an organization user's): its own counts, by day. A fleet: its partners' counts, by day
  // and hour, so the boundary's bucket read row by row is an hour of the fleet's snapshots.
  const fleet = orgId === null && principal.scope !== 'organization';
  const scopeIds = fleet ? [...new Set(organizations.map((o) => o.partnerId))] : orgIds;
  const category = query.category ?? null;
  const [devices, counts] = await Promise.all([
    countDevices(db, orgIds),
    selectCounts(db, { scopeIds, orgIds, hourly: fleet, staleDays: query.staleDays, asOf, category }),
  ]);
  const { coverage, products } = fromCounts(devices, counts, category);
  const report = {
    generatedAt: asOf.toISOString(),
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
    asOf: new Date(),
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
