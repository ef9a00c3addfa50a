/**
 * The Patching page: per organization, its compliance (devices in their worst state, device × patch pairs, per ring)
 * with the daily trend, the status of each ring of its patching policies with the promotion gate's numbers, and a
 * device's patches. The organization is kept in the address (?org=). Its buttons act through the API (the server
 * decides who may): a ring paused or resumed, started now, a held patch promoted through its gate; a device's patch
 * approved, declined or deferred for the organization. Each outcome is told in the page's status line.
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
  pagination: { total: number };
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
  patches: {
    patchId: string;
    title: string;
    installed: number;
    failed: number;
    successPercent: number | null;
    passed: boolean;
  }[];
}

/** Runs an action's request; once it answered, tells `done` (or what it answered) and shows the changed state. */
type Act = <T>(work: () => Promise<T>, done: (reply: T) => string, after: () => void) => void;

const actionButton = (label: string, text: string, onclick: () => void, disabled = false) =>
  h('button', { type: 'button', class: 'secondary-button', 'aria-label': label, disabled, onclick }, text);

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
    h(
      'p',
      { class: 'muted' },
      c.pagination.total > c.deviceStates.length
        ? `The first ${c.deviceStates.length} of ${c.pagination.total} devices by hostname; the CSV export lists them all.`
        : `${c.pagination.total} devices.`,
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

async function showRings(api: ApiClient, slot: HTMLElement, orgId: string, act: Act) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the rings…'));
  const params = new URLSearchParams({ kind: 'patching', orgId, limit: '50' });
  const policies = (await api.get<{ data: { items: { type: string; id?: string }[] }[] }>('/policies', params)).data;
  const ringIds = policies.flatMap((p) => p.items.filter((i) => i.type === 'ring' && i.id).map((i) => i.id!));
  if (ringIds.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No ring in this organization’s patching policies.'));
    return;
  }
  const rings = await Promise.all(ringIds.map((id) => api.get<RingStatus>(`/patch-rings/${id}/status`)));
  const again = () => void showRings(api, slot, orgId, act);
  fill(
    slot,
    rings.map((r) => {
      const path = `/patch-rings/${r.ringId}`;
      // One key per drawing of the ring: a second press before the page redraws answers the same job.
      const runKey = crypto.randomUUID();
      return h(
        'article',
        { class: 'ring', 'data-ring': r.ringId },
        h('h3', {}, `Ring ${r.key} (order ${r.order})${r.paused ? ', paused' : ''}`),
        h(
          'p',
          {},
          `${r.devices} devices · gate: at least ${r.promotion.minDevices} installed, ${r.promotion.minSuccessPercent} % success, ${r.promotion.soakHours} h soak · next occurrence ${r.nextOccurrence?.utc ?? 'none'}`,
        ),
        h(
          'div',
          { class: 'ring-actions' },
          actionButton(`${r.paused ? 'Resume' : 'Pause'} ring ${r.key}`, r.paused ? 'Resume' : 'Pause', () =>
            act(
              () => api.send('POST', `${path}/${r.paused ? 'resume' : 'pause'}`),
              () => `Ring ${r.key} ${r.paused ? 'resumed' : 'paused'}.`,
              again,
            ),
          ),
          actionButton(
            `Run now, ring ${r.key}`,
            'Run now',
            () =>
              act(
                () =>
                  api.send<{ jobId: string; devices: number }>('POST', `${path}/run-now`, undefined, undefined, {
                    'Idempotency-Key': runKey,
                  }),
                (job) => `Ring ${r.key} started now: ${job.devices} devices with installs (job ${job.jobId}).`,
                again,
              ),
            r.paused,
          ),
        ),
        r.patches.length === 0
          ? h('p', { class: 'empty' }, 'No install result yet.')
          : table(
              `Promotion gate of ring ${r.key}`,
              ['Patch', 'Installed', 'Failed', 'Success', 'Gate', 'Action'],
              r.patches.map((p) => [
                p.title,
                String(p.installed),
                String(p.failed),
                p.successPercent === null ? '—' : `${p.successPercent} %`,
                p.passed ? 'passed' : 'held',
                p.passed
                  ? ''
                  : actionButton(`Promote ${p.title} through ring ${r.key}`, 'Promote', () =>
                      act(
                        () => api.send('POST', `${path}/promote`, { patchIds: [p.patchId] }),
                        () => `${p.title} promoted through ring ${r.key}: the next ring may install it.`,
                        again,
                      ),
                    ),
              ]),
            ),
      );
    }),
  );
}

/** The day after `days` days, as a date input's value (local). */
function dayInputValue(days: number) {
  const day = new Date(Date.now() + days * 86_400_000);
  return `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, '0')}-${String(day.getDate()).padStart(2, '0')}`;
}

async function showDevice(
  api: ApiClient,
  slot: HTMLElement,
  device: { deviceId: string; orgId: string },
  act: Act,
  changed: () => void,
) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the device’s patches…'));
  const d = await api.get<{
    data: {
      patchId: string;
      kb: string | null;
      title: string;
      state: string;
      approval: string;
      severity: string;
    }[];
  }>(`/devices/${device.deviceId}/patches`);
  const until = h('input', { type: 'date', id: 'defer-until', name: 'until', value: dayInputValue(7), required: true });
  const decide = (verb: 'approve' | 'decline' | 'defer', name: string, patchId: string) => () => {
    const body: Record<string, string> = { orgId: device.orgId };
    if (verb === 'defer') body.until = new Date(`${until.value}T00:00`).toISOString();
    const told = { approve: 'approved', decline: 'declined', defer: `deferred until ${until.value}` }[verb];
    act(
      () => api.send('POST', `/patches/${patchId}/${verb}`, body),
      () => `${name} ${told} for the organization.`,
      () => {
        void showDevice(api, slot, device, act, changed);
        changed();
      },
    );
  };
  fill(
    slot,
    d.data.length === 0
      ? h('p', { class: 'empty' }, 'The device’s scans list no patch.')
      : [
          h('label', { class: 'field' }, h('span', { class: 'label' }, 'Defer until'), until),
          table(
            'Patches of the device',
            ['Patch', 'Severity', 'State', 'Approval', 'Decision for the organization'],
            d.data.map((p) => {
              const name = p.kb ? `${p.kb} ${p.title}` : p.title;
              return [
                name,
                p.severity,
                p.state,
                p.approval,
                h(
                  'div',
                  { class: 'patch-actions' },
                  actionButton(`Approve ${name}`, 'Approve', decide('approve', name, p.patchId)),
                  actionButton(`Decline ${name}`, 'Decline', decide('decline', name, p.patchId)),
                  actionButton(`Defer ${name}`, 'Defer', decide('defer', name, p.patchId)),
                ),
              ];
            }),
          ),
        ],
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
  const outcome = h('p', { class: 'muted', id: 'patching-outcome', role: 'status', 'aria-live': 'polite' });
  const compliance = h('div', { id: 'compliance' });
  const rings = h('div', { id: 'rings' });
  const device = h('div', { id: 'device' });
  const act: Act = (work, done, after) => {
    fill(outcome, 'Working…');
    work().then(
      (reply) => {
        fill(outcome, done(reply));
        after();
      },
      (error) => {
        fill(outcome);
        fail(error);
      },
    );
  };
  const showOrgCompliance = () => showCompliance(api, compliance, orgSelect.value, openDevice).catch(fail);
  const openDevice = (id: string) =>
    showDevice(api, device, { deviceId: id, orgId: orgSelect.value }, act, showOrgCompliance).catch(fail);
  const refresh = () => {
    history.replaceState(null, '', `?org=${encodeURIComponent(orgSelect.value)}`);
    fill(device);
    fill(outcome);
    showOrgCompliance();
    showRings(api, rings, orgSelect.value, act).catch(fail);
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
      outcome,
      titledPanel('compliance-title', 'Compliance', compliance),
      titledPanel('rings-title', 'Rings', rings),
      titledPanel('device-title', 'Device', device),
    ),
  );
  refresh();
}

startPage('patching.html', render);
