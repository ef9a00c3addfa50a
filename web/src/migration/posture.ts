/**
 * The management-posture report of one organization (GET /reports/management-posture): coverage and each detected
 * product as bars on one scale of devices, the devices behind a product and status (the drill-down), CSV downloads.
 */
import { type ApiClient, describeError } from '../api.ts';
import { fill, h } from '../element.ts';
import { saveFile } from '../save-file.ts';
import { stackedBar } from './charts.ts';

interface PostureReport {
  generatedAt: string;
  staleDays: number;
  coverage: { devices: number; neverScanned: number; stale: number; clean: number; withDetection: number };
  products: { category: string; product: string; active: number; installed: number; stale: number }[];
}

interface PostureDevice {
  deviceId: string;
  hostname: string;
  category: string;
  product: string;
  version: string | null;
  status: 'active' | 'installed';
  collectedAt: string;
  stale: boolean;
}

interface DevicePage {
  data: PostureDevice[];
  pagination: { page: number; limit: number; total: number; totalPages: number };
}

const drillLimit = 25;

/** A button that downloads `path` with `params` as a file, saying what it saved (or why not) in `status`. */
export function downloadButton(
  api: ApiClient,
  label: string,
  request: () => { path: string; params: URLSearchParams },
  status: HTMLElement,
) {
  const button: HTMLButtonElement = h(
    'button',
    {
      type: 'button',
      class: 'secondary-button',
      onclick: async () => {
        button.disabled = true;
        fill(status, 'Preparing the download…');
        try {
          const { path, params } = request();
          const { blob, filename } = await api.download(path, params);
          saveFile(blob, filename);
          fill(status, `Downloaded ${filename}.`);
        } catch (error) {
          fill(status, h('span', { class: 'notice-error' }, `Download failed. ${describeError(error, api.baseUrl)}`));
        } finally {
          button.disabled = false;
        }
      },
    },
    label,
  );
  return button;
}

/** Draws the report of `orgId` with a staleness window of `staleDays` into `slot`. */
export async function showPosture(api: ApiClient, slot: HTMLElement, orgId: string, staleDays: number) {
  const params = () => new URLSearchParams({ orgId, staleDays: String(staleDays) });
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the posture report…'));
  const report = await api.get<PostureReport>('/reports/management-posture', params());
  const { coverage } = report;
  const scale = coverage.devices;
  const drill = h('section', { class: 'drill', 'aria-live': 'polite' });
  const status = h('span', { class: 'export-status', role: 'status' });

  const figure = (kind: string, label: string, value: number) =>
    h(
      'li',
      { class: `legend-item ${kind}` },
      h('span', { class: 'swatch', 'aria-hidden': 'true' }),
      `${label} `,
      h('strong', {}, value),
    );

  const coverageRows = [
    { kind: 'bar-never', label: 'Never scanned', value: coverage.neverScanned },
    {
      kind: 'bar-stale',
      label: `Stale (over ${report.staleDays} ${report.staleDays === 1 ? 'day' : 'days'})`,
      value: coverage.stale,
    },
    { kind: 'bar-clean', label: 'Clean', value: coverage.clean },
    { kind: 'bar-detected', label: 'With a detection', value: coverage.withDetection },
  ];
  const productRow = (p: PostureReport['products'][number]) => {
    const open = (statusName: 'active' | 'installed', value: number) =>
      value > 0
        ? h(
            'button',
            {
              type: 'button',
              class: 'link drill-link',
              'data-status': statusName,
              onclick: () => void showDevices(api, drill, { orgId, staleDays, product: p.product, status: statusName }),
            },
            `${value} ${statusName}`,
          )
        : h('span', { class: 'muted' }, `0 ${statusName}`);
    return h(
      'tr',
      { class: 'product-row', 'data-product': p.product },
      h(
        'th',
        { scope: 'row' },
        h('span', { class: 'primary' }, p.product),
        h('span', { class: 'secondary' }, p.category),
      ),
      h(
        'td',
        { class: 'chart-cell' },
        stackedBar(
          [
            { kind: 'bar-active', label: 'Active', value: p.active },
            { kind: 'bar-installed', label: 'Installed', value: p.installed },
            { kind: 'bar-stale', label: 'Stale', value: p.stale },
          ],
          scale,
          p.product,
        ),
      ),
      h(
        'td',
        { class: 'figures' },
        open('active', p.active),
        ' · ',
        open('installed', p.installed),
        ' · ',
        h('span', { class: 'muted' }, `${p.stale} stale`),
      ),
    );
  };
  const coverageRow = (row: (typeof coverageRows)[number]) =>
    h(
      'tr',
      { class: 'coverage-row', 'data-population': row.kind },
      h('th', { scope: 'row' }, row.label),
      h('td', { class: 'chart-cell' }, stackedBar([row], scale, row.label)),
      h('td', { class: 'figures' }, h('strong', {}, row.value), ' devices'),
    );

  fill(
    slot,
    h(
      'div',
      { class: 'coverage' },
      h(
        'p',
        { class: 'summary' },
        `${coverage.devices} devices; report of ${new Date(report.generatedAt).toLocaleString()}.`,
      ),
      stackedBar(coverageRows, scale, 'Coverage'),
      h(
        'ul',
        { class: 'legend', 'aria-label': 'Coverage' },
        coverageRows.map((row) => figure(row.kind, row.label, row.value)),
      ),
    ),
    h(
      'table',
      { class: 'posture-chart' },
      h('caption', {}, 'Devices per detected product and per coverage population, on one scale'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'Product'),
          h('th', { scope: 'col' }, 'Devices'),
          h('th', { scope: 'col' }, 'Figures'),
        ),
      ),
      h(
        'tbody',
        {},
        report.products.length
          ? report.products.map(productRow)
          : h('tr', {}, h('td', { colspan: 3, class: 'empty' }, 'No product detected.')),
        coverageRows.filter((row) => row.kind === 'bar-clean' || row.kind === 'bar-never').map(coverageRow),
      ),
    ),
    h(
      'div',
      { class: 'exports', role: 'group', 'aria-label': 'Download the report' },
      downloadButton(
        api,
        'Report CSV',
        () => ({ path: '/reports/management-posture', params: withCsv(params()) }),
        status,
      ),
      status,
    ),
    drill,
  );
}

const withCsv = (params: URLSearchParams) => {
  params.set('format', 'csv');
  return params;
};

/** The devices behind one product and status, a page at a time, with their CSV download. */
async function showDevices(
  api: ApiClient,
  slot: HTMLElement,
  filter: { orgId: string; staleDays: number; product: string; status: 'active' | 'installed' },
  page = 1,
) {
  const params = () =>
    new URLSearchParams({
      orgId: filter.orgId,
      staleDays: String(filter.staleDays),
      product: filter.product,
      status: filter.status,
    });
  const query = params();
  query.set('page', String(page));
  query.set('limit', String(drillLimit));
  fill(
    slot,
    h('p', { class: 'muted', role: 'status' }, `Loading the devices with ${filter.product} ${filter.status}…`),
  );
  try {
    const result = await api.get<DevicePage>('/reports/management-posture/devices', query);
    const { total, totalPages } = result.pagination;
    const status = h('span', { class: 'export-status', role: 'status' });
    const turn = (to: number, label: string) =>
      h(
        'button',
        {
          type: 'button',
          class: 'secondary-button',
          disabled: to < 1 || to > totalPages,
          onclick: () => void showDevices(api, slot, filter, to),
        },
        label,
      );
    fill(
      slot,
      h('h3', {}, `${filter.product}, ${filter.status}: ${total} devices`),
      h(
        'table',
        { class: 'trail drill-devices' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Device', 'Version', 'Scanned', 'State'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          result.data.map((d) =>
            h(
              'tr',
              {},
              h('td', {}, d.hostname),
              h('td', {}, d.version ?? '—'),
              h('td', { class: 'time' }, new Date(d.collectedAt).toLocaleString()),
              h('td', {}, d.stale ? 'stale scan' : 'current'),
            ),
          ),
        ),
      ),
      h(
        'div',
        { class: 'toolbar' },
        turn(page - 1, 'Previous'),
        h('span', { class: 'page-position' }, `Page ${page} of ${Math.max(totalPages, 1)}`),
        turn(page + 1, 'Next'),
        downloadButton(
          api,
          'Devices CSV',
          () => ({ path: '/reports/management-posture/devices', params: withCsv(params()) }),
          status,
        ),
        status,
      ),
    );
  } catch (error) {
    fill(slot, h('p', { class: 'notice notice-error' }, describeError(error, api.baseUrl)));
  }
}
