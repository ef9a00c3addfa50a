/**
 * The devices list of one organization: a page of `GET /devices` (or, with a filter in the device-group filter
 * language, of `POST …/device-groups/preview`), and beside its devices what one call answers for the whole page
 * (`POST …/device-summaries`: open alerts, groups, custom fields). Custom fields are optional columns; the CSV holds
 * the rows and columns shown.
 */
import type { z } from 'zod';
import type { definition } from '../../../shared/custom-fields/schemas.ts';
import type { devicePage, organization, site } from '../../../shared/hierarchy/schemas.ts';
import { describeError } from '../api.ts';
import { csvRecord } from '../csv-record.ts';
import { fill, h } from '../element.ts';
import type { PageContext } from '../page-shell.ts';
import { saveFile } from '../save-file.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';
import { titledPanel } from '../views/panel.ts';
import { type Device, type DeviceSummary, fieldText, isOnline, localTime, osText } from './format.ts';

type Organization = z.output<typeof organization>;
type Site = z.output<typeof site>;
type Definition = z.output<typeof definition>;

const pageSize = 50;

/** The list's view, as the address keeps it. */
interface View {
  org: string;
  filter: string;
  fields: string[];
  page: number;
}

function viewOf(search: string, organizations: Organization[]): View {
  const address = new URLSearchParams(search);
  return {
    org: organizations.find((o) => o.id === address.get('org'))?.id ?? organizations[0]!.id,
    filter: address.get('filter') ?? '',
    fields: (address.get('fields') ?? '').split(',').filter(Boolean),
    page: Math.max(1, Math.trunc(Number(address.get('page'))) || 1),
  };
}

function addressOf(view: View): string {
  const params = new URLSearchParams({ org: view.org });
  if (view.filter) params.set('filter', view.filter);
  if (view.fields.length) params.set('fields', view.fields.join(','));
  if (view.page > 1) params.set('page', String(view.page));
  return `?${params}`;
}

/** One row as shown: the device and what the summaries said of it. */
interface Row {
  device: Device;
  summary: DeviceSummary | undefined;
}

export async function showList({ api, main, fail }: PageContext) {
  const reached = await reachableOrganizations<Organization>(api, main);
  if (!reached) return;
  const organizations = reached;
  let view = viewOf(location.search, organizations);

  const orgSelect = organizationSelect(organizations, view.org);
  const filterInput = h('textarea', {
    id: 'filter',
    name: 'filter',
    rows: 3,
    spellcheck: 'false',
    placeholder: '{ "field": "hostname", "op": "startsWith", "value": "SRV-" }',
    'aria-describedby': 'filter-hint',
  });
  filterInput.value = view.filter;
  const columnsSlot = h('fieldset', { class: 'columns', id: 'columns' });
  const tableSlot = h('div', { class: 'slot', id: 'devices', 'aria-live': 'polite' });
  const status = h('p', { class: 'muted', role: 'status', id: 'list-status' });

  let definitions: Definition[] = [];
  let sites = new Map<string, string>();
  let rows: Row[] = [];
  let total = 0;
  let loadedOrg = '';

  const go = (next: Partial<View>, push = true) => {
    view = { ...view, ...next };
    const address = addressOf(view);
    if (push) history.pushState(null, '', address);
    else history.replaceState(null, '', address);
    load().catch(fail);
  };

  async function loadOrganization() {
    if (loadedOrg === view.org) return;
    const [siteList, fieldList] = await Promise.all([
      api.get<{ data: Site[] }>(`/orgs/organizations/${view.org}/sites`, new URLSearchParams({ limit: '100' })),
      // A token that may not read the definitions still sees the list, without custom field columns.
      api
        .get<{ data: Definition[] }>('/custom-fields', new URLSearchParams({ orgId: view.org, limit: '500' }))
        .catch(() => ({ data: [] as Definition[] })),
    ]);
    sites = new Map(siteList.data.map((s) => [s.id, s.name]));
    definitions = fieldList.data;
    loadedOrg = view.org;
  }

  async function load() {
    orgSelect.value = view.org;
    filterInput.value = view.filter;
    fill(status, 'Loading the devices…');
    let filter: unknown;
    if (view.filter.trim()) {
      try {
        filter = JSON.parse(view.filter);
      } catch (error) {
        fill(status);
        fill(
          tableSlot,
          h(
            'p',
            { class: 'notice notice-error' },
            `The filter is not JSON: ${error instanceof Error ? error.message : String(error)}.`,
          ),
        );
        return;
      }
    }
    await loadOrganization();
    const paging = new URLSearchParams({ page: String(view.page), limit: String(pageSize) });
    let page: z.output<typeof devicePage>;
    try {
      page =
        filter === undefined
          ? await api.get('/devices', new URLSearchParams({ orgId: view.org, ...Object.fromEntries(paging) }))
          : await api.send(
              'POST',
              `/orgs/organizations/${view.org}/device-groups/preview`,
              { filter },
              new URLSearchParams({ ...Object.fromEntries(paging), sort: 'hostname' }),
            );
    } catch (error) {
      fill(status);
      fill(tableSlot, h('p', { class: 'notice notice-error' }, describeError(error, api.baseUrl)));
      return;
    }
    const summaries =
      page.data.length > 0
        ? await api.send<{ data: DeviceSummary[] }>('POST', `/orgs/organizations/${view.org}/device-summaries`, {
            deviceIds: page.data.map((d) => d.id),
          })
        : { data: [] };
    const byId = new Map(summaries.data.map((s) => [s.deviceId, s]));
    rows = page.data.map((device) => ({ device, summary: byId.get(device.id) }));
    total = page.pagination.total;
    draw();
  }

  /** The columns shown, each with its header and its cell's text (the CSV writes these). */
  const columns = () => [
    { id: 'hostname', label: 'Hostname', text: (r: Row) => r.device.hostname },
    { id: 'site', label: 'Site', text: (r: Row) => sites.get(r.device.siteId) ?? null },
    { id: 'os', label: 'OS', text: (r: Row) => osText(r.device) || null },
    {
      id: 'online',
      label: 'Online',
      text: (r: Row) => (r.device.online || isOnline(r.device.lastSeenAt) ? 'online' : 'offline'),
    },
    {
      id: 'alerts',
      label: 'Open alerts',
      text: (r: Row) => (r.summary?.openAlerts === null || !r.summary ? null : String(r.summary.openAlerts)),
    },
    {
      id: 'groups',
      label: 'Groups',
      text: (r: Row) => (r.summary?.groups ?? []).map((g) => g.name).join('; ') || null,
    },
    ...view.fields
      .filter((key) => definitions.some((d) => d.key === key))
      .map((key) => ({
        id: `field:${key}`,
        label: definitions.find((d) => d.key === key)!.name,
        text: (r: Row) => (r.summary?.customFields[key] === undefined ? null : fieldText(r.summary.customFields[key])),
      })),
  ];

  const deviceLink = (device: Device) =>
    h(
      'a',
      { href: `?${new URLSearchParams({ org: view.org, device: device.id })}`, class: 'device-link' },
      device.hostname,
    );

  const cell = (column: ReturnType<typeof columns>[number], row: Row) => {
    const label = { 'data-label': column.label };
    switch (column.id) {
      case 'hostname':
        return h(
          'th',
          { scope: 'row', ...label },
          deviceLink(row.device),
          row.device.displayName ? h('span', { class: 'secondary' }, row.device.displayName) : null,
        );
      case 'online': {
        const online = row.device.online || isOnline(row.device.lastSeenAt);
        return h(
          'td',
          {
            ...label,
            title: row.device.lastSeenAt ? `Last seen ${localTime(row.device.lastSeenAt)}` : 'Never seen',
          },
          h(
            'span',
            { class: `presence ${online ? 'presence-online' : 'presence-offline'}` },
            online ? '● Online' : '○ Offline',
          ),
        );
      }
      case 'alerts': {
        const count = row.summary?.openAlerts;
        return h(
          'td',
          { ...label, class: 'number' },
          count === null || count === undefined
            ? h('span', { class: 'muted' }, '—')
            : count > 0
              ? h('span', { class: 'alert-count' }, `${count} open`)
              : h('span', { class: 'muted' }, '0'),
        );
      }
      case 'groups':
        return h(
          'td',
          label,
          (row.summary?.groups ?? []).length
            ? h(
                'ul',
                { class: 'chips' },
                row.summary!.groups.map((g) => h('li', { class: 'chip' }, g.name)),
              )
            : h('span', { class: 'muted' }, '—'),
        );
      default:
        return h('td', label, column.text(row));
    }
  };

  function draw() {
    fill(
      columnsSlot,
      h('legend', {}, 'Custom field columns'),
      definitions.length === 0
        ? h('p', { class: 'muted' }, 'This organization has no custom fields.')
        : definitions.map((d) =>
            h(
              'label',
              { class: 'check' },
              h('input', {
                type: 'checkbox',
                name: 'fields',
                value: d.key,
                checked: view.fields.includes(d.key),
                onchange: (event: Event) => {
                  const input = event.target as HTMLInputElement;
                  const fields = definitions
                    .map((x) => x.key)
                    .filter((key) => (key === d.key ? input.checked : view.fields.includes(key)));
                  go({ fields }, false);
                },
              }),
              ` ${d.name}`,
            ),
          ),
    );
    const shown = columns();
    const first = total === 0 ? 0 : (view.page - 1) * pageSize + 1;
    const last = (view.page - 1) * pageSize + rows.length;
    const totalPages = Math.max(1, Math.ceil(total / pageSize));
    fill(status, total === 0 ? 'No device matches.' : `Devices ${first}–${last} of ${total}`);
    const exportStatus = h('span', { class: 'export-status', role: 'status' });
    fill(
      tableSlot,
      h(
        'div',
        { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-labelledby': 'devices-caption' },
        h(
          'table',
          { class: 'devices-table' },
          h('caption', { id: 'devices-caption' }, 'Devices', view.filter ? ' matching the filter' : ''),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              shown.map((c) => h('th', { scope: 'col', class: c.id === 'alerts' ? 'number' : null }, c.label)),
            ),
          ),
          h(
            'tbody',
            {},
            rows.length
              ? rows.map((row) =>
                  h(
                    'tr',
                    { 'data-device': row.device.id },
                    shown.map((c) => cell(c, row)),
                  ),
                )
              : h('tr', {}, h('td', { colspan: shown.length, class: 'empty' }, 'No device matches.')),
          ),
        ),
      ),
      h(
        'div',
        { class: 'toolbar' },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary-button',
            disabled: view.page <= 1,
            onclick: () => go({ page: view.page - 1 }),
          },
          'Previous',
        ),
        h('span', { class: 'page-position' }, `Page ${view.page} of ${totalPages}`),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary-button',
            disabled: view.page >= totalPages,
            onclick: () => go({ page: view.page + 1 }),
          },
          'Next',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary-button',
            disabled: rows.length === 0,
            onclick: () => {
              const lines = [
                csvRecord(shown.map((c) => c.label)),
                ...rows.map((row) => csvRecord(shown.map((c) => c.text(row)))),
              ];
              const name = organizations.find((o) => o.id === view.org)?.name ?? 'devices';
              const filename = `devices-${name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}-page-${view.page}.csv`;
              saveFile(new Blob([`${lines.join('\r\n')}\r\n`], { type: 'text/csv' }), filename);
              fill(exportStatus, `Downloaded ${filename} (${rows.length} rows).`);
            },
          },
          'Export CSV',
        ),
        exportStatus,
      ),
    );
  }

  fill(
    main,
    h(
      'div',
      { class: 'devices' },
      h(
        'form',
        {
          class: 'filters devices-filters',
          onsubmit: (event: Event) => {
            event.preventDefault();
            go({ filter: filterInput.value.trim(), page: 1 });
          },
        },
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), orgSelect),
        h(
          'div',
          { class: 'field filter-field' },
          h('label', { class: 'label', for: 'filter' }, 'Filter'),
          filterInput,
          h(
            'span',
            { class: 'hint', id: 'filter-hint' },
            'The device-group filter language (JSON): fields such as hostname, osType, online, siteId, ',
            'customField:<key>; operators such as equals, contains, startsWith; combine with all, any, not.',
          ),
        ),
        h(
          'div',
          { class: 'filter-actions' },
          h('button', { type: 'submit', class: 'primary-button' }, 'Apply'),
          h(
            'button',
            {
              type: 'button',
              class: 'secondary-button',
              onclick: () => go({ filter: '', page: 1 }),
            },
            'Clear',
          ),
        ),
      ),
      columnsSlot,
      titledPanel('devices-title', 'Devices', status, tableSlot),
    ),
  );
  orgSelect.addEventListener('change', () => go({ org: orgSelect.value, page: 1 }));
  window.addEventListener('popstate', () => {
    view = viewOf(location.search, organizations);
    if (!new URLSearchParams(location.search).get('device')) load().catch(fail);
  });
  history.replaceState(null, '', addressOf(view));
  await load();
}
