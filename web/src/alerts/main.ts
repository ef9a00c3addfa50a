/**
 * The Alerts page: alerts across the caller's reach with filters kept in the address (?orgId=&status=&severity=
 * &source=&siteId=&deviceId=&from=&to=), bulk acknowledge and resolve, an alert's detail (what raised it, the samples that fired
 * it, the maintenance window that held it back, its notification log), and the organization's maintenance calendar.
 */
import type { ApiClient } from '../api.ts';
import { type Child, fill, h } from '../element.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { instantOfLocalInput, localInputValue, localTime } from '../time.ts';
import { titledPanel } from '../views/panel.ts';

interface Alert {
  id: string;
  orgId: string;
  deviceId: string | null;
  source:
    | { type: 'script' | 'automation'; id: string }
    | { type: 'monitor'; policyId: string; itemKey: string; policyVersion: number };
  severity: string;
  title: string;
  details: Record<string, unknown>;
  status: 'open' | 'acknowledged' | 'resolved';
  occurrences: number;
  lastOccurredAt: string;
  createdAt: string;
  suppressedBy: { maintenanceWindowId: string } | null;
}
interface Notification {
  id: string;
  channelType: string;
  event: string;
  step: number | null;
  status: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
}
interface Occurrence {
  key: string;
  local: string;
  utc: string;
}
interface MaintenanceWindow {
  id: string;
  name: string;
  schedule: { rrule: string | null; timezone: string; durationMinutes: number };
  active: { until: string } | null;
}
interface Organization {
  id: string;
  name: string;
}

const statuses = ['open', 'acknowledged', 'resolved'] as const;
const severities = ['low', 'medium', 'high', 'critical'] as const;
const filterNames = ['orgId', 'status', 'severity', 'source', 'siteId', 'deviceId', 'from', 'to'] as const;

const select = (id: string, label: string, options: [string, string][], value: string | null) =>
  h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    h(
      'select',
      { id, name: id },
      options.map(([v, text]) => h('option', { value: v, selected: v === (value ?? '') }, text)),
    ),
  );
const input = (id: string, label: string, props: Record<string, string>) =>
  h('label', { class: 'field' }, h('span', { class: 'label' }, label), h('input', { id, name: id, ...props }));

/** A badge in words and colour: severity, status, "held back". */
const badge = (kind: string, text: string) => h('span', { class: `alert-badge alert-badge-${kind}` }, text);

async function render({ api, main, fail }: PageContext) {
  fill(main, h('p', { class: 'muted', role: 'status' }, 'Loading the alerts…'));
  const { data: organizations } = await api.get<{ data: Organization[] }>(
    '/orgs/organizations',
    new URLSearchParams({ limit: '100' }),
  );
  const orgName = new Map(organizations.map((o) => [o.id, o.name]));
  const address = new URLSearchParams(location.search);
  const localOf = (iso: string | null) => (iso ? localInputValue(new Date(iso)) : '');

  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter the alerts' },
    h(
      'div',
      { class: 'filter-grid' },
      select(
        'orgId',
        'Organization',
        [['', 'All'], ...organizations.map((o) => [o.id, o.name] as [string, string])],
        address.get('orgId'),
      ),
      select(
        'status',
        'Status',
        [['', 'Any'], ...statuses.map((s) => [s, s] as [string, string])],
        address.get('status'),
      ),
      select(
        'severity',
        'Severity',
        [['', 'Any'], ...severities.map((s) => [s, s] as [string, string])],
        address.get('severity'),
      ),
      select(
        'source',
        'Source',
        [
          ['', 'Any'],
          ['script', 'script'],
          ['monitor', 'monitor'],
          ['automation', 'automation'],
        ],
        address.get('source'),
      ),
      input('siteId', 'Site id', { value: address.get('siteId') ?? '', placeholder: 'any site' }),
      input('deviceId', 'Device id', { value: address.get('deviceId') ?? '', placeholder: 'any device' }),
      input('from', 'Raised from', { type: 'datetime-local', step: '1', value: localOf(address.get('from')) }),
      input('to', 'Raised to', { type: 'datetime-local', step: '1', value: localOf(address.get('to')) }),
    ),
    h('div', {}, h('button', { type: 'submit', class: 'primary-button' }, 'Show alerts')),
  );
  const outcome = h('div', { class: 'slot', id: 'bulk-outcome', role: 'status', 'aria-live': 'polite' });
  const list = h('div', { class: 'slot', id: 'alert-list' });
  const detail = h('section', { class: 'panel', id: 'alert-detail', 'aria-labelledby': 'detail-title', hidden: true });
  const calendar = h('div', { class: 'slot', id: 'calendar' });

  const filters = () => {
    const query = new URLSearchParams();
    for (const name of filterNames) {
      const value = (form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement).value.trim();
      if (!value) continue;
      const instant = name === 'from' || name === 'to' ? instantOfLocalInput(value, name) : value;
      if (instant) query.set(name, instant);
    }
    return query;
  };

  const show = () => {
    const query = filters();
    history.replaceState(null, '', query.size ? `?${query}` : location.pathname);
    showList(api, list, query, orgName, (alert) => showDetail(api, detail, alert).catch(fail), outcome, fail).catch(
      fail,
    );
    const orgId = query.get('orgId') ?? organizations[0]?.id;
    if (orgId) showCalendar(api, calendar, orgId, orgName.get(orgId) ?? '').catch(fail);
    else fill(calendar, h('p', { class: 'empty' }, 'No organization to show.'));
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    show();
  });

  fill(
    main,
    h(
      'div',
      { class: 'alerts-page' },
      form,
      titledPanel('list-title', 'Alerts', outcome, list),
      detail,
      titledPanel('calendar-title', 'Maintenance calendar', calendar),
    ),
  );
  show();
}

async function showList(
  api: ApiClient,
  slot: HTMLElement,
  query: URLSearchParams,
  orgName: Map<string, string>,
  open: (alert: Alert) => void,
  outcome: HTMLElement,
  fail: (error: unknown) => void,
) {
  slot.setAttribute('aria-busy', 'true');
  const page = await api.get<{ data: Alert[]; pagination: { total: number; totalExact: boolean } }>(
    '/alerts',
    new URLSearchParams({ ...Object.fromEntries(query), limit: '100' }),
  );
  slot.removeAttribute('aria-busy');
  if (page.data.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No alert matches these filters.'));
    return;
  }
  const boxes = page.data.map((alert) =>
    h('input', { type: 'checkbox', value: alert.id, 'aria-label': `Select ${alert.title}` }),
  );
  const all = h('input', { type: 'checkbox', id: 'select-all', 'aria-label': 'Select every alert shown' });
  all.addEventListener('change', () => {
    for (const box of boxes) box.checked = all.checked;
  });
  const bulk = (action: 'acknowledge' | 'resolve') => async () => {
    const alertIds = boxes.filter((box) => box.checked).map((box) => box.value);
    if (alertIds.length === 0) {
      fill(outcome, h('p', { class: 'notice' }, 'Select the alerts first.'));
      return;
    }
    const reply = await api.send<{ results: { alertId: string; outcome: string }[]; changed: number }>(
      'POST',
      `/alerts/${action}`,
      { alertIds },
    );
    const refused = reply.results.filter((r) => r.outcome !== (action === 'acknowledge' ? 'acknowledged' : 'resolved'));
    fill(
      outcome,
      h(
        'p',
        { class: 'notice' },
        `${action === 'acknowledge' ? 'Acknowledged' : 'Resolved'} ${reply.changed} of ${alertIds.length}.`,
        refused.length
          ? ` Not changed: ${refused.length} (${[...new Set(refused.map((r) => r.outcome.replace('_', ' ')))].join(', ')}).`
          : '',
      ),
    );
    await showList(api, slot, query, orgName, open, outcome, fail);
  };
  const total = `${page.pagination.total}${page.pagination.totalExact ? '' : '+'}`;
  fill(
    slot,
    h(
      'div',
      { class: 'toolbar' },
      h('p', { class: 'muted' }, `${page.data.length} shown of ${total}`),
      h(
        'div',
        { class: 'bulk-actions' },
        h(
          'button',
          { type: 'button', class: 'secondary-button', onclick: () => bulk('acknowledge')().catch(fail) },
          'Acknowledge selected',
        ),
        h(
          'button',
          { type: 'button', class: 'secondary-button', onclick: () => bulk('resolve')().catch(fail) },
          'Resolve selected',
        ),
      ),
    ),
    h(
      'table',
      { class: 'trail alert-table' },
      h('caption', { class: 'visually-hidden' }, 'Alerts, newest first'),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, all),
          ...['Raised', 'Severity', 'Status', 'Alert', 'Organization'].map((title) => h('th', { scope: 'col' }, title)),
        ),
      ),
      h(
        'tbody',
        {},
        page.data.map((alert, i) =>
          h(
            'tr',
            { 'data-alert': alert.id },
            h('td', {}, boxes[i]!),
            h('td', { class: 'time', title: alert.createdAt }, localTime(alert.createdAt)),
            h('td', {}, badge(alert.severity, alert.severity)),
            h(
              'td',
              { class: 'alert-status' },
              badge(alert.status, alert.status),
              alert.suppressedBy ? badge('held', 'held back by maintenance') : null,
            ),
            h(
              'td',
              {},
              h('button', { type: 'button', class: 'open-entry', onclick: () => open(alert) }, alert.title),
              alert.occurrences > 1 ? h('span', { class: 'secondary' }, `${alert.occurrences} occurrences`) : null,
            ),
            h('td', {}, orgName.get(alert.orgId) ?? alert.orgId),
          ),
        ),
      ),
    ),
  );
}

/** The facts of a record as a definition list. */
const facts = (entries: [string, Child][]) =>
  h(
    'dl',
    { class: 'alert-facts' },
    entries.flatMap(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );

async function showDetail(api: ApiClient, panel: HTMLElement, alert: Alert) {
  panel.hidden = false;
  fill(
    panel,
    h('h2', { id: 'detail-title', tabindex: '-1' }, alert.title),
    h('p', { class: 'muted', role: 'status' }, 'Loading…'),
  );
  (panel.querySelector('#detail-title') as HTMLElement).focus();
  const [log, window] = await Promise.all([
    api.get<{ data: Notification[] }>(`/alerts/${alert.id}/notifications`, new URLSearchParams({ limit: '200' })),
    alert.suppressedBy
      ? api
          .get<MaintenanceWindow>(`/maintenance-windows/${alert.suppressedBy.maintenanceWindowId}`)
          .catch(() => undefined)
      : Promise.resolve(undefined),
  ]);
  fill(
    panel,
    h('h2', { id: 'detail-title', tabindex: '-1' }, alert.title),
    facts([
      ['Severity', badge(alert.severity, alert.severity)],
      ['Status', badge(alert.status, alert.status)],
      [
        'Raised by',
        alert.source.type === 'monitor'
          ? `monitor item ${alert.source.itemKey} of policy ${alert.source.policyId} (version ${alert.source.policyVersion})`
          : alert.source.type === 'automation'
            ? `automation (run ${alert.source.id})`
            : `script (run item ${alert.source.id})`,
      ],
      ['Raised', localTime(alert.createdAt)],
      ['Last occurred', `${localTime(alert.lastOccurredAt)} (${alert.occurrences} in all)`],
      [
        'Maintenance',
        alert.suppressedBy
          ? `Held back by ${window?.name ?? 'a maintenance window'} (${alert.suppressedBy.maintenanceWindowId})`
          : 'Not held back',
      ],
    ]),
    h('h3', {}, 'What fired it'),
    facts(
      Object.entries(alert.details).map(([key, value]) => [
        key,
        typeof value === 'string' ? value : JSON.stringify(value),
      ]),
    ),
    h('h3', {}, 'Notification log'),
    log.data.length === 0
      ? h('p', { class: 'empty' }, 'Nobody was notified of this alert.')
      : h(
          'table',
          { class: 'trail notification-log' },
          h('caption', { class: 'visually-hidden' }, 'Notifications of this alert'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Time', 'Channel', 'Event', 'Status', 'Attempts', 'Last error'].map((t) => h('th', { scope: 'col' }, t)),
            ),
          ),
          h(
            'tbody',
            {},
            log.data.map((n) =>
              h(
                'tr',
                {},
                h('td', { class: 'time' }, localTime(n.createdAt)),
                h('td', {}, n.channelType),
                h(
                  'td',
                  {},
                  n.step !== null && n.event === 'alert.escalated' ? `${n.event} (step ${n.step + 1})` : n.event,
                ),
                h('td', {}, n.status),
                h('td', {}, String(n.attempts)),
                h('td', {}, n.lastError ?? ''),
              ),
            ),
          ),
        ),
  );
}

async function showCalendar(api: ApiClient, slot: HTMLElement, orgId: string, name: string) {
  const { data: windows } = await api.get<{ data: MaintenanceWindow[] }>(
    '/maintenance-windows',
    new URLSearchParams({ orgId, limit: '50' }),
  );
  if (windows.length === 0) {
    fill(slot, h('p', { class: 'empty' }, `${name} has no maintenance window.`));
    return;
  }
  const from = new Date();
  const to = new Date(from.getTime() + 30 * 86_400_000);
  const occurrences = await Promise.all(
    windows.map((w) =>
      api.get<{ occurrences: Occurrence[] }>(
        `/maintenance-windows/${w.id}/occurrences`,
        new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), limit: '10' }),
      ),
    ),
  );
  fill(
    slot,
    h('p', { class: 'muted' }, `${name}: the next 30 days, in each window's local time.`),
    h(
      'ul',
      { class: 'calendar' },
      windows.map((w, i) =>
        h(
          'li',
          { 'data-window': w.id },
          h('strong', {}, w.name),
          ` (${w.schedule.timezone}, ${w.schedule.durationMinutes} min)`,
          w.active ? badge('held', `in progress until ${localTime(w.active.until)}`) : null,
          occurrences[i]!.occurrences.length === 0
            ? h('p', { class: 'muted' }, 'No occurrence in the next 30 days.')
            : h(
                'ul',
                {},
                occurrences[i]!.occurrences.map((o) =>
                  h(
                    'li',
                    { class: 'occurrence' },
                    h('time', { datetime: o.utc }, o.local.replace('T', ' ')),
                    ` (${o.utc.slice(0, 16).replace('T', ' ')} UTC)`,
                  ),
                ),
              ),
        ),
      ),
    ),
  );
}

startPage('alerts.html', render);
