/**
 * The Automations page: the automations of an organization and its partner (?org=), each with its triggers, next
 * occurrences in local time (one list per zone for device-local schedules) and its last run; an automation's detail
 * with its runs and a dry run; a run's per-device outcome with the script runs it started.
 */
import type { ApiClient } from '../api.ts';
import { type Child, fill, h } from '../element.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { localTime } from '../time.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';
import { titledPanel } from '../views/panel.ts';

interface Trigger {
  type: string;
  event?: string;
  schedule?: { rrule?: string; start: string; timezone?: string };
}
interface Automation {
  id: string;
  name: string;
  enabled: boolean;
  availability: 'organization' | 'partner';
  triggers: Trigger[];
  actions: { type: string }[];
}
interface Occurrence {
  key: string;
  local: string;
  utc: string;
}
interface Schedules {
  schedules: { trigger: number; timezone: string; deviceLocal: boolean; occurrences: Occurrence[] }[];
}
interface ActionOutcome {
  index: number;
  type: string;
  status: string;
  scriptRunId?: string;
  exitCode?: number | null;
  output?: string | null;
  error?: string;
}
interface Run {
  id: string;
  status: string;
  trigger: { type: string; event?: string; timezone?: string; occurrence?: string };
  counts: Record<string, number>;
  createdAt: string;
  items?: {
    deviceId: string;
    hostname: string;
    status: string;
    skipReason: string | null;
    actions: ActionOutcome[];
  }[];
}
interface DryRun {
  devices: { deviceId: string; hostname: string; timezone: string; wouldRun: boolean; skipReason: string | null }[];
  nextOccurrences: { trigger: number; timezone: string; occurrence: Occurrence | null }[];
}

const badge = (kind: string, text: string) => h('span', { class: `alert-badge alert-badge-${kind}` }, text);
/** A run or item status in the colours of alerts: failures red, skips amber, the rest green. */
const statusBadge = (status: string) =>
  badge(
    status === 'failed' || status === 'partial' ? 'high' : status === 'skipped' || status === 'queued' ? 'held' : 'low',
    status,
  );

const triggerText = (t: Trigger) =>
  t.type === 'event'
    ? `on ${t.event}`
    : t.type === 'schedule'
      ? `${t.schedule?.rrule ?? 'once'} from ${t.schedule?.start} (${t.schedule?.timezone ?? "each device's local time"})`
      : t.type;

const table = (caption: string, heads: string[], rows: Child[][], className = 'trail') =>
  h(
    'table',
    { class: className },
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        heads.map((title) => h('th', { scope: 'col' }, title)),
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

const occurrenceText = (o: Occurrence) => h('time', { datetime: o.utc }, o.local.replace('T', ' '));

async function render({ api, main, fail }: PageContext) {
  const organizations = await reachableOrganizations<{ id: string; name: string }>(api, main);
  if (!organizations) return;
  const address = new URLSearchParams(location.search);
  const chosen = organizations.find((o) => o.id === address.get('org'))?.id ?? organizations[0]!.id;
  const choice = organizationSelect(organizations, chosen);
  const list = h('div', { class: 'slot', id: 'automation-list' });
  const detail = h('section', {
    class: 'panel',
    id: 'automation-detail',
    'aria-labelledby': 'detail-title',
    hidden: true,
  });
  const run = h('section', { class: 'panel', id: 'run-detail', 'aria-labelledby': 'run-title', hidden: true });
  const show = () => {
    history.replaceState(null, '', `?org=${choice.value}`);
    showList(api, list, choice.value, (a) => showDetail(api, detail, run, a, fail).catch(fail)).catch(fail);
  };
  choice.addEventListener('change', show);
  fill(
    main,
    h(
      'div',
      { class: 'alerts-page' },
      h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), choice),
      titledPanel('list-title', 'Automations', list),
      detail,
      run,
    ),
  );
  show();
}

async function showList(api: ApiClient, slot: HTMLElement, orgId: string, open: (a: Automation) => void) {
  slot.setAttribute('aria-busy', 'true');
  const { data } = await api.get<{ data: Automation[] }>('/automations', new URLSearchParams({ orgId, limit: '100' }));
  const from = new Date();
  const to = new Date(from.getTime() + 30 * 86_400_000);
  const [schedules, runs] = await Promise.all([
    Promise.all(
      data.map((a) =>
        a.triggers.some((t) => t.type === 'schedule')
          ? api.get<Schedules>(
              `/automations/${a.id}/occurrences`,
              new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), limit: '3' }),
            )
          : Promise.resolve({ schedules: [] }),
      ),
    ),
    Promise.all(
      data.map((a) => api.get<{ data: Run[] }>(`/automations/${a.id}/runs`, new URLSearchParams({ limit: '1' }))),
    ),
  ]);
  slot.removeAttribute('aria-busy');
  if (data.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No automation in this organization.'));
    return;
  }
  fill(
    slot,
    table(
      'Automations of the organization and its partner',
      ['Automation', 'Owner', 'Triggers', 'Next occurrences (local time)', 'Last run'],
      data.map((a, i) => {
        const last = runs[i]!.data[0];
        return [
          h('button', { type: 'button', class: 'open-entry', 'data-automation': a.id, onclick: () => open(a) }, a.name),
          [a.availability === 'partner' ? 'partner' : 'organization', a.enabled ? '' : ' (disabled)'].join(''),
          h(
            'ul',
            { class: 'plain' },
            a.triggers.map((t) => h('li', {}, triggerText(t))),
          ),
          h(
            'ul',
            { class: 'plain' },
            schedules[i]!.schedules.map((s) =>
              h('li', {}, `${s.timezone}: `, s.occurrences[0] ? occurrenceText(s.occurrences[0]) : 'none'),
            ),
          ),
          last ? h('span', {}, statusBadge(last.status), ` ${localTime(last.createdAt)}`) : 'never',
        ];
      }),
      'trail automation-table',
    ),
  );
}

async function showDetail(
  api: ApiClient,
  panel: HTMLElement,
  runPanel: HTMLElement,
  automation: Automation,
  fail: (error: unknown) => void,
) {
  panel.hidden = false;
  fill(panel, h('h2', { id: 'detail-title', tabindex: '-1' }, automation.name), h('p', { class: 'muted' }, 'Loading…'));
  (panel.querySelector('#detail-title') as HTMLElement).focus();
  const { data: runs } = await api.get<{ data: Run[] }>(
    `/automations/${automation.id}/runs`,
    new URLSearchParams({ limit: '20' }),
  );
  const dry = h('div', { class: 'slot', id: 'dry-run', 'aria-live': 'polite' });
  const dryRun = async () => {
    const reply = await api.send<DryRun>('POST', `/automations/${automation.id}/dry-run`, {});
    fill(
      dry,
      h('h3', {}, 'Dry run: what would run now'),
      reply.devices.length === 0
        ? h('p', { class: 'empty' }, 'No device is in scope.')
        : table(
            'Devices the automation would run on now',
            ['Device', 'Zone', 'Would run'],
            reply.devices.map((d) => [d.hostname, d.timezone, d.wouldRun ? 'yes' : `no (${d.skipReason})`]),
            'trail dry-run-table',
          ),
      reply.nextOccurrences.length === 0
        ? null
        : h(
            'ul',
            { class: 'plain' },
            reply.nextOccurrences.map((n) =>
              h('li', {}, `Next in ${n.timezone}: `, n.occurrence ? occurrenceText(n.occurrence) : 'none'),
            ),
          ),
    );
  };
  fill(
    panel,
    h('h2', { id: 'detail-title', tabindex: '-1' }, automation.name),
    h('p', {}, `Actions: ${automation.actions.map((a) => a.type).join(', ')}`),
    h('button', { type: 'button', class: 'secondary-button', onclick: () => dryRun().catch(fail) }, 'Dry run'),
    dry,
    h('h3', {}, 'Runs'),
    runs.length === 0
      ? h('p', { class: 'empty' }, 'It has not run yet.')
      : table(
          'Runs of the automation, newest first',
          ['Started', 'Trigger', 'Status', 'Devices'],
          runs.map((r) => [
            h(
              'button',
              { type: 'button', class: 'open-entry', onclick: () => showRun(api, runPanel, r.id, fail).catch(fail) },
              localTime(r.createdAt),
            ),
            r.trigger.type === 'event'
              ? `event ${r.trigger.event}`
              : r.trigger.type === 'schedule'
                ? `schedule ${r.trigger.occurrence} (${r.trigger.timezone})`
                : r.trigger.type,
            statusBadge(r.status),
            Object.entries(r.counts)
              .filter(([, n]) => n > 0)
              .map(([status, n]) => `${n} ${status}`)
              .join(', ') || 'none',
          ]),
          'trail run-table',
        ),
  );
}

async function showRun(api: ApiClient, panel: HTMLElement, runId: string, fail: (error: unknown) => void) {
  panel.hidden = false;
  const run = await api.get<Run>(`/automation-runs/${runId}`);
  const scripts = h('div', { class: 'slot', id: 'script-run', 'aria-live': 'polite' });
  const openScriptRun = async (scriptRunId: string) => {
    const { data } = await api.get<{
      data: { hostname?: string; deviceId: string; status: string; exitCode: number | null }[];
    }>(`/script-runs/${scriptRunId}/items`);
    fill(
      scripts,
      h('h3', {}, `Script run ${scriptRunId}`),
      table(
        'Items of the script run',
        ['Device', 'Status', 'Exit code'],
        data.map((item) => [
          item.hostname ?? item.deviceId,
          item.status,
          item.exitCode === null ? '' : String(item.exitCode),
        ]),
      ),
    );
  };
  fill(
    panel,
    h('h2', { id: 'run-title', tabindex: '-1' }, `Run of ${localTime(run.createdAt)}`),
    h('p', {}, 'Status: ', statusBadge(run.status)),
    table(
      'Each device of the run',
      ['Device', 'Status', 'Actions'],
      (run.items ?? []).map((item) => [
        item.hostname,
        h('span', {}, statusBadge(item.status), item.skipReason ? ` ${item.skipReason}` : ''),
        h(
          'ul',
          { class: 'plain' },
          item.actions.map((a) =>
            h(
              'li',
              {},
              `${a.type}: ${a.status}`,
              a.exitCode != null ? ` (exit ${a.exitCode})` : '',
              a.error ? ` — ${a.error}` : '',
              a.scriptRunId
                ? h(
                    'button',
                    { type: 'button', class: 'open-entry', onclick: () => openScriptRun(a.scriptRunId!).catch(fail) },
                    'script run',
                  )
                : null,
            ),
          ),
        ),
      ]),
      'trail run-items',
    ),
    scripts,
  );
  (panel.querySelector('#run-title') as HTMLElement).focus();
}

startPage('automations.html', render);
