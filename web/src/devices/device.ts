/**
 * One device's page: its facts, the state of each monitoring item with the last samples of metric items as a small
 * chart, its effective monitoring policy items with where each comes from (policy, version, assignment level and
 * target; what it overrode, what is exempted or blocked), its open alerts, its groups and its custom fields. Each
 * section loads on its own: one that fails (a token without alerts:read) says so and the others still show.
 */
import type { z } from 'zod';
import type { definition } from '../../../shared/custom-fields/schemas.ts';
import type { organization, site } from '../../../shared/hierarchy/schemas.ts';
import { type ApiClient, ApiError, describeError } from '../api.ts';
import { type Child, fill, h } from '../element.ts';
import type { PageContext } from '../page-shell.ts';
import { format, sparkline } from './chart.ts';
import { type Device, fieldText, type Group, isOnline, localTime, osText } from './format.ts';

/*
 * The replies of the policy and monitoring routes (shared/policies/schemas.ts effectivePolicies, monitorState,
 * metricSeries), written out: that module reaches node:dns through the alerts' schemas, which the page cannot load.
 */
type Level = 'partner' | 'organization' | 'site' | 'group' | 'device';
interface Origin {
  policyId: string;
  policyName: string;
  policyVersion: number;
  assignmentId: string;
  level: Level;
  targetId: string;
  priority: number;
}
interface Effective {
  deviceId: string;
  configVersion: string;
  items: { key: string; item: Record<string, unknown>; origin: Origin; overridden: Origin[] }[];
  exempted: {
    key: string;
    origin: Origin;
    exemption: { id: string; level: 'site' | 'group' | 'device'; targetId: string; reason: string };
  }[];
  blocked: Origin[];
}
interface MonitorState {
  itemKey: string;
  type: string;
  state: 'ok' | 'pending' | 'firing';
  since: string;
  lastValue: number | null;
  alertId: string | null;
}
interface MetricSeries {
  metric: string;
  samples: { volume: string | null; value: number; timestamp: string }[];
}
/** An alert as GET /alerts answers it, in the part shown (shared/alerts/schemas.ts alert: its module reaches node:dns). */
interface Alert {
  id: string;
  title: string;
  severity: 'low' | 'medium' | 'high' | 'critical';
  source: { type: 'script' } | { type: 'monitor'; itemKey: string; policyVersion: number };
  occurrences: number;
  lastOccurredAt: string;
}

/** How many of the latest samples a chart shows. */
const chartSamples = 60;

const unitOf = (metric: string) => (metric === 'disk.freeBytes' ? 'bytes' : '%');

/** An item's settings in words: what it watches and when it fires. */
function describeItem(item: Record<string, unknown>): string {
  const minutes = (seconds: unknown) => `${Math.round(Number(seconds) / 6) / 10} min`;
  switch (item.type) {
    case 'metric': {
      const unit = unitOf(String(item.metric));
      const op = item.op === 'gt' ? '>' : '<';
      const clear = item.op === 'gt' ? '<' : '>';
      return `${item.metric}${item.volume ? ` (${item.volume})` : ''}, ${item.aggregation} over ${minutes(
        item.windowSeconds,
      )} ${op} ${format(Number(item.threshold), unit)}, clears ${clear} ${format(
        Number(item.clearThreshold),
        unit,
      )}, pending ${minutes(item.pendingSeconds ?? 0)}`;
    }
    case 'offline':
      return `no heartbeat for ${item.minutes} min`;
    case 'service':
      return `service ${item.name} ${item.expect}`;
    case 'process':
      return `process ${item.name} ${item.expect}`;
    case 'event-log':
      return `event log: ${[item.source, item.eventId, item.level, item.text].filter((v) => v !== undefined).join(' · ') || 'any event'}, at least ${item.count} in ${minutes(item.windowSeconds)}`;
    case 'script':
      return `script check every ${item.intervalMinutes} min`;
    default:
      return String(item.type);
  }
}

const stateLabel: Record<MonitorState['state'], string> = { ok: '✓ OK', pending: '◔ Pending', firing: '✕ Firing' };

export async function showDevice({ api, main, fail }: PageContext, deviceId: string) {
  fill(main, h('p', { class: 'muted', role: 'status' }, 'Loading the device…'));
  let device: Device & { customFields: Record<string, unknown> };
  try {
    device = await api.get(`/devices/${deviceId}`);
  } catch (error) {
    fill(
      main,
      h(
        'div',
        { class: 'devices device-page' },
        h('p', { class: 'back' }, h('a', { href: '?' }, '← Devices')),
        h('p', { class: 'notice notice-error' }, describeError(error, api.baseUrl)),
      ),
    );
    if (error instanceof ApiError && error.status === 401) fail(error);
    return;
  }
  const back = `?${new URLSearchParams({ org: device.orgId })}`;
  const [org, sites, fields, groups] = await Promise.all([
    api.get<z.output<typeof organization>>(`/orgs/organizations/${device.orgId}`),
    api.get<{ data: z.output<typeof site>[] }>(
      `/orgs/organizations/${device.orgId}/sites`,
      new URLSearchParams({ limit: '100' }),
    ),
    api
      .get<{ data: z.output<typeof definition>[] }>(
        '/custom-fields',
        new URLSearchParams({ orgId: device.orgId, limit: '500' }),
      )
      .catch(() => ({ data: [] })),
    api.get<{ data: Group[] }>(`/devices/${deviceId}/groups`, new URLSearchParams({ limit: '100' })),
  ]);
  const siteName = new Map(sites.data.map((s) => [s.id, s.name]));
  const targetName = (origin: Pick<Origin, 'level' | 'targetId'>): string => {
    switch (origin.level) {
      case 'partner':
        return 'partner-wide';
      case 'organization':
        return origin.targetId === org.id ? `organization ${org.name}` : 'organization';
      case 'site':
        return `site ${siteName.get(origin.targetId) ?? origin.targetId}`;
      case 'group':
        return `group ${groups.data.find((g) => g.id === origin.targetId)?.name ?? origin.targetId}`;
      case 'device':
        return 'this device';
    }
  };

  const online = device.online || isOnline(device.lastSeenAt);
  const section = (id: string, title: string, ...children: Child[]) =>
    h(
      'section',
      { class: 'panel', id, 'aria-labelledby': `${id}-title` },
      h('h2', { id: `${id}-title` }, title),
      ...children,
    );
  const monitors = h('div', { class: 'slot', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const policies = h('div', { class: 'slot', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const alerts = h('div', { class: 'slot', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));

  fill(
    main,
    h(
      'div',
      { class: 'devices device-page' },
      h('p', { class: 'back' }, h('a', { href: back }, `← Devices of ${org.name}`)),
      h(
        'div',
        { class: 'device-head' },
        h('h2', { id: 'device-title' }, device.hostname),
        device.displayName ? h('p', { class: 'secondary' }, device.displayName) : null,
        h(
          'dl',
          { class: 'facts device-facts' },
          fact(
            'Status',
            h(
              'span',
              { class: `presence ${online ? 'presence-online' : 'presence-offline'}` },
              online ? '● Online' : '○ Offline',
            ),
          ),
          fact('Last seen', device.lastSeenAt ? localTime(device.lastSeenAt) : 'never'),
          fact('Site', siteName.get(device.siteId) ?? '—'),
          fact('OS', osText(device) || '—'),
          fact('Role', device.role ?? '—'),
          fact('Agent', device.agentVersion ?? '—'),
          fact('IP address', device.lastIp ?? '—'),
        ),
      ),
      section('monitors', 'Monitor states', monitors),
      section('policies', 'Effective policies', policies),
      section('open-alerts', 'Open alerts', alerts),
      section(
        'groups',
        'Groups',
        groups.data.length
          ? h(
              'ul',
              { class: 'chips' },
              groups.data.map((g: Group) =>
                h('li', { class: 'chip' }, g.name, h('span', { class: 'secondary' }, ` ${g.type}`)),
              ),
            )
          : h('p', { class: 'empty' }, 'In no group.'),
      ),
      section('fields', 'Custom fields', customFields(device.customFields, fields.data)),
    ),
  );
  document.title = `${device.hostname} · Devices · Logbook`;

  const guard = (slot: HTMLElement, work: Promise<void>) =>
    work.catch((error: unknown) => {
      fill(slot, h('p', { class: 'notice notice-error' }, describeError(error, api.baseUrl)));
      if (error instanceof ApiError && error.status === 401) fail(error);
    });
  const effective = api.get<Effective>(
    `/devices/${deviceId}/effective-policies`,
    new URLSearchParams({ kind: 'monitoring' }),
  );
  await Promise.all([
    guard(
      policies,
      effective.then((e) => fill(policies, policyTable(e, targetName))),
    ),
    guard(monitors, showMonitors(api, monitors, deviceId, effective)),
    guard(
      alerts,
      api
        .get<{ data: Alert[] }>('/alerts', new URLSearchParams({ deviceId, status: 'open', limit: '200' }))
        .then((page) => fill(alerts, alertTable(page.data))),
    ),
  ]);
}

const fact = (label: string, value: Child) => h('div', { class: 'fact' }, h('dt', {}, label), h('dd', {}, value));

function customFields(values: Record<string, unknown>, definitions: z.output<typeof definition>[]) {
  const keys = Object.keys(values);
  if (keys.length === 0) return h('p', { class: 'empty' }, 'No custom field value.');
  const name = (key: string) => definitions.find((d) => d.key === key)?.name ?? key;
  return h(
    'dl',
    { class: 'facts field-values' },
    keys.map((key) => fact(name(key), fieldText(values[key]) || '—')),
  );
}

function policyTable(effective: Effective, targetName: (origin: Pick<Origin, 'level' | 'targetId'>) => string) {
  const origin = (o: Origin) =>
    h(
      'span',
      { class: 'origin' },
      h('span', { class: 'primary' }, `${o.policyName} v${o.policyVersion}`),
      h(
        'span',
        { class: 'secondary' },
        `assigned ${o.level === 'partner' ? '' : 'to '}${targetName(o)}, priority ${o.priority}`,
      ),
    );
  const parts: Child[] = [];
  if (effective.items.length === 0 && effective.exempted.length === 0)
    parts.push(h('p', { class: 'empty' }, 'No monitoring policy applies to this device.'));
  else
    parts.push(
      scroll(
        'Effective monitoring items',
        h(
          'table',
          { class: 'devices-table policy-table' },
          h('caption', {}, 'Effective monitoring items and where each comes from'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Item', 'What it watches', 'From', 'Overrides'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            effective.items.map((i) =>
              h(
                'tr',
                { 'data-item': i.key },
                h(
                  'th',
                  { scope: 'row', 'data-label': 'Item' },
                  i.key,
                  h('span', { class: 'secondary' }, String(i.item.severity ?? '')),
                ),
                h('td', { 'data-label': 'What it watches' }, describeItem(i.item)),
                h('td', { 'data-label': 'From' }, origin(i.origin)),
                h(
                  'td',
                  { 'data-label': 'Overrides' },
                  i.overridden.length
                    ? h(
                        'ul',
                        { class: 'plain' },
                        i.overridden.map((o) => h('li', {}, origin(o))),
                      )
                    : h('span', { class: 'muted' }, '—'),
                ),
              ),
            ),
            effective.exempted.map((x) =>
              h(
                'tr',
                { 'data-item': x.key, class: 'exempted' },
                h('th', { scope: 'row', 'data-label': 'Item' }, x.key, h('span', { class: 'secondary' }, 'exempted')),
                h('td', { 'data-label': 'What it watches' }, `Exempted: ${x.exemption.reason}`),
                h('td', { 'data-label': 'From' }, origin(x.origin)),
                h(
                  'td',
                  { 'data-label': 'Overrides' },
                  `exemption for ${targetName({ level: x.exemption.level, targetId: x.exemption.targetId })}`,
                ),
              ),
            ),
          ),
        ),
      ),
    );
  if (effective.blocked.length)
    parts.push(
      h(
        'p',
        { class: 'blocked' },
        'Kept from this device by blocked inheritance: ',
        effective.blocked.flatMap((o, index) => [
          index ? '; ' : '',
          `${o.policyName} v${o.policyVersion} (${targetName(o)})`,
        ]),
      ),
    );
  parts.push(h('p', { class: 'muted config-version' }, `Config version ${effective.configVersion}`));
  return parts;
}

/** A table that scrolls on its own on a narrow screen, reachable by keyboard. */
const scroll = (label: string, table: HTMLTableElement) =>
  h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': label }, table);

async function showMonitors(api: ApiClient, slot: HTMLElement, deviceId: string, effective: Promise<Effective>) {
  const [{ data: states }, policies] = await Promise.all([
    api.get<{ data: MonitorState[] }>(`/devices/${deviceId}/monitor-states`),
    effective,
  ]);
  const items = new Map(policies.items.map((i) => [i.key, i.item]));
  // The metric items of the device, whether or not they have a state yet: their samples are the charts.
  const keys = [...new Set([...states.map((s) => s.itemKey), ...policies.items.map((i) => i.key)])];
  const metricKeys = keys.filter((key) => items.get(key)?.type === 'metric');
  const series = new Map(
    await Promise.all(
      metricKeys.map(async (key) => {
        const item = items.get(key)!;
        const params = new URLSearchParams({ metric: String(item.metric), limit: String(chartSamples) });
        if (item.volume) params.set('volume', String(item.volume));
        return [key, await api.get<MetricSeries>(`/devices/${deviceId}/metrics`, params)] as const;
      }),
    ),
  );
  if (keys.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'No monitoring item applies to this device.'));
    return;
  }
  const stateOf = new Map(states.map((s) => [s.itemKey, s]));
  fill(
    slot,
    scroll(
      'Monitor states',
      h(
        'table',
        { class: 'devices-table monitor-table' },
        h('caption', {}, 'The state of each monitoring item, with the last samples of metrics'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Item', 'State', 'Since', 'Last value', 'Last samples'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        h(
          'tbody',
          {},
          keys.map((key) => {
            const state = stateOf.get(key);
            const item = items.get(key);
            const unit = item?.type === 'metric' ? unitOf(String(item.metric)) : '';
            const samples = series.get(key)?.samples ?? [];
            return h(
              'tr',
              { 'data-item': key, 'data-state': state?.state ?? null },
              h(
                'th',
                { scope: 'row', 'data-label': 'Item' },
                key,
                h('span', { class: 'secondary' }, item ? describeItem(item) : (state?.type ?? '')),
              ),
              h(
                'td',
                { 'data-label': 'State' },
                state
                  ? h('span', { class: `state state-${state.state}` }, stateLabel[state.state])
                  : h('span', { class: 'muted' }, 'not evaluated yet'),
                state?.alertId ? h('span', { class: 'secondary' }, 'alert open') : null,
              ),
              h('td', { 'data-label': 'Since', class: 'time' }, state ? localTime(state.since) : '—'),
              h(
                'td',
                { 'data-label': 'Last value' },
                state?.lastValue === null || state?.lastValue === undefined
                  ? '—'
                  : unit
                    ? format(state.lastValue, unit)
                    : String(state.lastValue),
              ),
              h(
                'td',
                { 'data-label': 'Last samples', class: 'chart-cell' },
                item?.type === 'metric'
                  ? samples.length
                    ? sparkline(samples, `${key} (${item.metric})`, { threshold: Number(item.threshold), unit })
                    : h('span', { class: 'muted' }, 'no samples in the last 24 hours')
                  : h('span', { class: 'muted' }, '—'),
              ),
            );
          }),
        ),
      ),
    ),
  );
}

function alertTable(list: Alert[]) {
  if (list.length === 0) return h('p', { class: 'empty' }, 'No open alert.');
  return scroll(
    'Open alerts',
    h(
      'table',
      { class: 'devices-table alert-table' },
      h('caption', {}, `${list.length} open alert${list.length === 1 ? '' : 's'}`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Alert', 'Severity', 'Source', 'Last occurred'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        list.map((a) =>
          h(
            'tr',
            { 'data-alert': a.id },
            h(
              'th',
              { scope: 'row', 'data-label': 'Alert' },
              a.title,
              a.occurrences > 1 ? h('span', { class: 'secondary' }, `${a.occurrences} occurrences`) : null,
            ),
            h('td', { 'data-label': 'Severity' }, h('span', { class: `severity severity-${a.severity}` }, a.severity)),
            h(
              'td',
              { 'data-label': 'Source' },
              a.source.type === 'monitor'
                ? `monitor ${a.source.itemKey} (policy v${a.source.policyVersion})`
                : 'script',
            ),
            h(
              'td',
              { 'data-label': 'Last occurred', class: 'time', title: a.lastOccurredAt },
              localTime(a.lastOccurredAt),
            ),
          ),
        ),
      ),
    ),
  );
}
