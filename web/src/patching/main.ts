/**
 * The Patching page: per organization, its compliance (devices in their worst state, device × patch pairs, per ring)
 * with the daily trend, the status of each ring of its patching policies with the promotion gate's numbers, and a
 * device's patches. The organization is kept in the address (?org=).
 */
import type { ApiClient } from '../api.ts';
import { fill, h } from '../element.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';
import { titledPanel } from '../views/panel.ts';

type Counts = Record<string, number>;
interface Compliance {
  devices: Counts;
  pairs: Counts;
  osUpdaterNotSuppressed: number;
  rings: { ringId: string | null; key: string | null; devices: Counts }[];
  deviceStates: {
    deviceId: string;
    hostname: string;
    state: string;
    scannedAt: string | null;
    lastError: string | null;
  }[];
  trend: { day: string; devices: Counts }[];
}
interface RingStatus {
  ringId: string;
  key: string;
  order: number;
  paused: boolean;
  devices: number;
  promotion: { minDevices: number; minSuccessPercent: number; soakHours: number };
  nextOccurrence: { utc: string } | null;
  patches: { title: string; installed: number; failed: number; successPercent: number | null; passed: boolean }[];
}

const states = [
  ['failed', 'Failed'],
  ['missingApproved', 'Missing, approved'],
  ['pendingReboot', 'Pending reboot'],
  ['missingNotApproved', 'Missing, not approved'],
  ['installed', 'Installed'],
] as const;

function table(caption: string, headers: string[], rows: (string | Node)[][]) {
  return h(
    'table',
    { class: 'billing-table' },
    h('caption', {}, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((header) => h('th', { scope: 'col' }, header)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((cells) =>
        h(
          'tr',
          {},
          cells.map((cell) => h('td', {}, cell)),
        ),
      ),
    ),
  );
}

const countCells = (counts: Counts, stale = true) => [
  ...states.map(([key]) => String(counts[key] ?? 0)),
  ...(stale ? [String(counts.stale ?? 0)] : []),
];
const countHeaders = (stale = true) => [...states.map(([, label]) => label), ...(stale ? ['Not scanned'] : [])];

async function showCompliance(api: ApiClient, slot: HTMLElement, orgId: string, openDevice: (id: string) => void) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the compliance…'));
  const c = await api.get<Compliance>(`/orgs/organizations/${orgId}/patch-compliance`);
  fill(
    slot,
    table('Devices by worst state', countHeaders(), [countCells(c.devices)]),
    table('Device × patch pairs', countHeaders(false), [countCells(c.pairs, false)]),
    h('p', { class: 'muted' }, `Devices whose own updater is not suppressed: ${c.osUpdaterNotSuppressed}`),
    table(
      'Devices by ring',
      ['Ring', ...countHeaders()],
      c.rings.map((r) => [r.key ?? 'No patching policy', ...countCells(r.devices)]),
    ),
    c.trend.length === 0
      ? h('p', { class: 'empty' }, 'No daily counts yet.')
      : table(
          'Trend, one row a day',
          ['Day', ...countHeaders()],
          c.trend.map((t) => [t.day, ...countCells(t.devices)]),
        ),
    table(
      'Devices',
      ['Device', 'State', 'Last scan', 'Last error', ''],
      c.deviceStates.map((d) => [
        d.hostname,
        d.state,
        d.scannedAt ?? 'never',
        d.lastError ?? '',
        h(
          'button',
          {
            type: 'button',
            class: 'secondary-button',
            'aria-label': `Patches of ${d.hostname}`,
            onclick: () => openDevice(d.deviceId),
          },
          'Patches',
        ),
      ]),
    ),
  );
}

async function showRings(api: ApiClient, slot: HTMLElement, orgId: string) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the rings…'));
  const params = new URLSearchParams({ kind: 'patching', orgId, limit: '50' });
  const policies = (await api.get<{ data: { items: { type: string; id?: string }[] }[] }>('/policies', params)).data;
  const ringIds = policies.flatMap((p) => p.items.filter((i) => i.type === 'ring' && i.id).map((i) => i.id!));
  if (ringIds.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No ring in this organization’s patching policies.'));
    return;
  }
  const rings = await Promise.all(ringIds.map((id) => api.get<RingStatus>(`/patch-rings/${id}/status`)));
  fill(
    slot,
    rings.map((r) =>
      h(
        'article',
        { class: 'ring', 'data-ring': r.ringId },
        h('h3', {}, `Ring ${r.key} (order ${r.order})${r.paused ? ', paused' : ''}`),
        h(
          'p',
          {},
          `${r.devices} devices · gate: at least ${r.promotion.minDevices} installed, ${r.promotion.minSuccessPercent} % success, ${r.promotion.soakHours} h soak · next occurrence ${r.nextOccurrence?.utc ?? 'none'}`,
        ),
        r.patches.length === 0
          ? h('p', { class: 'empty' }, 'No install result yet.')
          : table(
              `Promotion gate of ring ${r.key}`,
              ['Patch', 'Installed', 'Failed', 'Success', 'Gate'],
              r.patches.map((p) => [
                p.title,
                String(p.installed),
                String(p.failed),
                p.successPercent === null ? '—' : `${p.successPercent} %`,
                p.passed ? 'passed' : 'held',
              ]),
            ),
      ),
    ),
  );
}

async function showDevice(api: ApiClient, slot: HTMLElement, deviceId: string) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the device’s patches…'));
  const d = await api.get<{
    data: { kb: string | null; title: string; state: string; approval: string; severity: string }[];
  }>(`/devices/${deviceId}/patches`);
  fill(
    slot,
    d.data.length === 0
      ? h('p', { class: 'empty' }, 'The device’s scans list no patch.')
      : table(
          'Patches of the device',
          ['Patch', 'Severity', 'State', 'Approval'],
          d.data.map((p) => [p.kb ? `${p.kb} ${p.title}` : p.title, p.severity, p.state, p.approval]),
        ),
  );
}

async function render({ api, main, fail }: PageContext) {
  const organizations = await reachableOrganizations(api, main);
  if (!organizations) return;
  const wanted = new URLSearchParams(location.search).get('org');
  const orgSelect = organizationSelect(
    organizations,
    organizations.some((o) => o.id === wanted) ? wanted! : organizations[0]!.id,
  );
  const compliance = h('div', { id: 'compliance' });
  const rings = h('div', { id: 'rings' });
  const device = h('div', { id: 'device' });
  const openDevice = (id: string) => showDevice(api, device, id).catch(fail);
  const refresh = () => {
    history.replaceState(null, '', `?org=${encodeURIComponent(orgSelect.value)}`);
    fill(device);
    showCompliance(api, compliance, orgSelect.value, openDevice).catch(fail);
    showRings(api, rings, orgSelect.value).catch(fail);
  };
  orgSelect.addEventListener('change', refresh);
  fill(
    main,
    h(
      'div',
      { class: 'patching-page' },
      h(
        'form',
        { class: 'filters migration-filters', onsubmit: (event: Event) => event.preventDefault() },
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), orgSelect),
      ),
      titledPanel('compliance-title', 'Compliance', compliance),
      titledPanel('rings-title', 'Rings', rings),
      titledPanel('device-title', 'Device', device),
    ),
  );
  refresh();
}

startPage('patching.html', render);
