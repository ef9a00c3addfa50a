/**
 * Enrollment progress of one organization (GET …/reconciliation: the latest comparison with the other RMM's device
 * list and every upload's counts over time) and the deployment-script download for one of its enrollment keys.
 */
import { type ApiClient, ApiError } from '../api.ts';
import { fill, h } from '../element.ts';
import { type Segment, stackedBar } from './charts.ts';
import { downloadButton } from './posture.ts';

type Counts = { enrolled: number; missing: number; extra: number; ambiguous: number };

interface ReconciliationProgress {
  latest: { createdAt: string; rows: number; counts: Counts } | null;
  history: { id: string; createdAt: string; rows: number; counts: Counts }[];
}

interface EnrollmentKey {
  id: string;
  name: string | null;
  keyPrefix: string;
  revokedAt: string | null;
  expiresAt: string | null;
  maxUsage: number;
  usageCount: number;
}

const states: { key: keyof Counts; label: string; kind: string }[] = [
  { key: 'enrolled', label: 'Enrolled', kind: 'bar-clean' },
  { key: 'missing', label: 'Missing', kind: 'bar-never' },
  { key: 'extra', label: 'Extra', kind: 'bar-installed' },
  { key: 'ambiguous', label: 'Ambiguous', kind: 'bar-detected' },
];
const segments = (counts: Counts): Segment[] =>
  states.map((s) => ({ kind: s.kind, label: s.label, value: counts[s.key] }));
const total = (counts: Counts) => counts.enrolled + counts.missing + counts.extra + counts.ambiguous;

/** The reconciliation counts of `orgId`: the latest as a bar and its legend, every upload as a row over time. */
export async function showProgress(api: ApiClient, slot: HTMLElement, orgId: string) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the enrollment progress…'));
  const progress = await api.get<ReconciliationProgress>(`/orgs/organizations/${orgId}/reconciliation`);
  if (!progress.latest) {
    fill(slot, h('p', { class: 'empty' }, 'No device list of the other RMM uploaded yet (POST …/reconciliation).'));
    return;
  }
  const { latest } = progress;
  const scale = Math.max(...progress.history.map((u) => total(u.counts)), total(latest.counts));
  fill(
    slot,
    h(
      'p',
      { class: 'summary' },
      `${latest.counts.enrolled} of ${latest.rows} listed devices enrolled (upload of ${new Date(latest.createdAt).toLocaleString()}).`,
    ),
    stackedBar(segments(latest.counts), total(latest.counts), 'Latest reconciliation'),
    h(
      'ul',
      { class: 'legend reconciliation-counts', 'aria-label': 'Latest reconciliation' },
      states.map((s) =>
        h(
          'li',
          { class: `legend-item ${s.kind}`, 'data-state': s.key },
          h('span', { class: 'swatch', 'aria-hidden': 'true' }),
          `${s.label} `,
          h('strong', {}, latest.counts[s.key]),
        ),
      ),
    ),
    h(
      'table',
      { class: 'posture-chart reconciliation-history' },
      h('caption', {}, 'Every upload, oldest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Uploaded', 'Counts', 'Listed', ...states.map((s) => s.label)].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        progress.history.map((u) =>
          h(
            'tr',
            {},
            h('td', { class: 'time' }, new Date(u.createdAt).toLocaleString()),
            h('td', { class: 'chart-cell' }, stackedBar(segments(u.counts), scale, 'Upload')),
            h('td', {}, u.rows),
            states.map((s) => h('td', {}, u.counts[s.key])),
          ),
        ),
      ),
    ),
  );
}

/** Picks a usable enrollment key of `orgId` and a platform, and downloads that key's deployment script. */
export async function showScripts(api: ApiClient, slot: HTMLElement, orgId: string) {
  let keys: EnrollmentKey[];
  try {
    keys = (
      await api.get<{ data: EnrollmentKey[] }>(
        `/orgs/organizations/${orgId}/enrollment-keys`,
        new URLSearchParams({ limit: '100' }),
      )
    ).data;
  } catch (error) {
    // A viewer without enrollment:manage sees why, not a broken page.
    if (error instanceof ApiError && error.status === 403) {
      fill(slot, h('p', { class: 'muted' }, 'Deployment scripts need the enrollment:manage permission.'));
      return;
    }
    throw error;
  }
  const usable = keys.filter(
    (k) => !k.revokedAt && (!k.expiresAt || Date.parse(k.expiresAt) > Date.now()) && k.usageCount < k.maxUsage,
  );
  if (usable.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No enrollment key of this organization can enroll another device.'));
    return;
  }
  const keySelect = h(
    'select',
    { id: 'script-key', name: 'key' },
    usable.map((k) =>
      h('option', { value: k.id }, `${k.name ?? k.keyPrefix} (${k.keyPrefix}…, ${k.usageCount} of ${k.maxUsage} used)`),
    ),
  );
  const platformSelect = h(
    'select',
    { id: 'script-platform', name: 'platform' },
    h('option', { value: 'windows' }, 'Windows (PowerShell)'),
    h('option', { value: 'macos' }, 'macOS (sh)'),
    h('option', { value: 'linux' }, 'Linux (sh)'),
  );
  const status = h('span', { class: 'export-status', role: 'status' });
  fill(
    slot,
    h(
      'div',
      { class: 'script-form' },
      h('label', { class: 'field' }, h('span', { class: 'label' }, 'Enrollment key'), keySelect),
      h('label', { class: 'field' }, h('span', { class: 'label' }, 'Platform'), platformSelect),
      downloadButton(
        api,
        'Download script',
        () => ({
          path: `/orgs/organizations/${orgId}/enrollment-keys/${keySelect.value}/deployment-script`,
          params: new URLSearchParams({ platform: platformSelect.value }),
        }),
        status,
      ),
      status,
    ),
    h(
      'p',
      { class: 'hint' },
      'The script does nothing where agent.yaml exists, so the old RMM may run it on every device, as often as it likes.',
    ),
  );
}
