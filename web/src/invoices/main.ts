/**
 * The Invoices page: per organization, its contracts with their lines, next period and an estimate; its invoices by
 * status; an invoice's lines, usage statement and downloads, with issue and void. The organization, the status
 * filter and the open invoice are kept in the address (?org=&status=&invoice=).
 */
import type { Contract, Estimate, Invoice, UsageStatement as Statement } from '../../../shared/billing/schemas.ts';
import { type ApiClient, ApiError, describeError } from '../api.ts';
import { fill, h } from '../element.ts';
import { downloadButton } from '../migration/posture.ts';
import { type PageContext, startPage } from '../page-shell.ts';
import { organizationSelect, reachableOrganizations } from '../views/organizations.ts';
import { titledPanel } from '../views/panel.ts';

interface Organization {
  id: string;
  name: string;
}

const statuses = ['draft', 'issued', 'void'] as const;

const money = (amount: string, currency: string) => `${amount} ${currency}`;

function table(caption: string, headers: string[], rows: (string | Node)[][], className = 'billing-table') {
  return h(
    'table',
    { class: className },
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

const linePrice = (line: Contract['lines'][number]) =>
  line.type === 'flat' || line.type === 'manual'
    ? (line.amount ?? '')
    : `${line.unitPrice}${line.includedQuantity === null ? '' : ` beyond ${line.includedQuantity}`}`;

/** The organization's contracts; an organization's users, who may not read them, are told so. */
async function showContracts(api: ApiClient, slot: HTMLElement, orgId: string) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the contracts…'));
  let contracts: Contract[];
  try {
    contracts = (await api.get<{ data: Contract[] }>(`/orgs/organizations/${orgId}/contracts`)).data;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403) {
      fill(slot, h('p', { class: 'muted' }, 'Contracts are kept by your provider; your issued invoices are below.'));
      return;
    }
    throw error;
  }
  if (contracts.length === 0) {
    fill(slot, h('p', { class: 'empty' }, 'This organization has no contract.'));
    return;
  }
  const estimates = await Promise.all(
    contracts.map((c) =>
      api
        .get<Estimate>(`/contracts/${c.id}/estimate`)
        .then((e) => `Estimate for ${e.periodStart} to ${e.periodEnd}: ${money(e.total, e.currency)}`)
        .catch((error: unknown) => `No estimate: ${describeError(error, api.baseUrl)}`),
    ),
  );
  fill(
    slot,
    contracts.map((c, i) =>
      h(
        'article',
        { class: 'contract', 'data-contract': c.id },
        h('h3', {}, `${c.currency} contract from ${c.startDate}`, c.endDate ? ` to ${c.endDate}` : ''),
        h(
          'p',
          { class: 'contract-terms' },
          `Status ${c.status} · every ${c.intervalMonths} month${c.intervalMonths === 1 ? '' : 's'} in ${c.billing} · `,
          `${c.timezone} · tax ${c.taxRatePercent} % · due in ${c.paymentTermsDays} days`,
        ),
        table(
          'Lines',
          ['Type', 'Description', 'Price', 'Taxable'],
          c.lines.map((line) => [line.type, line.description, linePrice(line), line.taxable ? 'yes' : 'no']),
        ),
        h(
          'p',
          { class: 'contract-next' },
          c.nextPeriod
            ? `Next period ${c.nextPeriod.start} to ${c.nextPeriod.end}, due ${c.nextDueOn}. `
            : 'No period left. ',
          h('span', { class: 'estimate' }, estimates[i]!),
        ),
      ),
    ),
  );
}

/** The organization's invoices with the chosen status; each opens its detail. */
async function showInvoices(
  api: ApiClient,
  slot: HTMLElement,
  orgId: string,
  status: string,
  open: (id: string) => void,
) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the invoices…'));
  const params = new URLSearchParams({ orgId, limit: '100' });
  if (status) params.set('status', status);
  const { data } = await api.get<{ data: Invoice[] }>('/invoices', params);
  if (data.length === 0) {
    fill(slot, h('p', { class: 'empty' }, status ? `No ${status} invoice.` : 'No invoice yet.'));
    return;
  }
  fill(
    slot,
    table(
      'Invoices, newest period first',
      ['Number', 'Kind', 'Period', 'Status', 'Total', ''],
      data.map((i) => [
        i.number ?? 'Draft',
        i.kind === 'credit' ? 'Credit note' : 'Invoice',
        `${i.periodStart} to ${i.periodEnd}`,
        i.status,
        money(i.total, i.currency),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary-button',
            'aria-label': `Open ${i.number ?? `draft for ${i.periodStart}`}`,
            onclick: () => open(i.id),
          },
          'Open',
        ),
      ]),
    ),
  );
}

/** An invoice: its lines and totals, the usage statement, downloads, and issue or void for whoever may. */
async function showInvoice(
  api: ApiClient,
  slot: HTMLElement,
  id: string,
  changed: () => void,
  fail: (error: unknown) => void,
) {
  fill(slot, h('p', { class: 'muted', role: 'status' }, 'Loading the invoice…'));
  const [invoice, statement] = await Promise.all([
    api.get<Invoice>(`/invoices/${id}`),
    api.get<Statement>(`/invoices/${id}/usage-statement`),
  ]);
  const status = h('p', { class: 'export-status', role: 'status' });
  const file = (format: string) => () => ({ path: `/invoices/${id}`, params: new URLSearchParams({ format }) });
  const act = async (action: 'issue' | 'void', body: unknown) => {
    try {
      await api.send('POST', `/invoices/${id}/${action}`, body);
      changed();
    } catch (error) {
      fail(error);
    }
  };
  const reason = h('input', { id: 'void-reason', name: 'reason', required: true, maxlength: 1000 });
  const actions =
    invoice.kind === 'invoice' && invoice.status !== 'void'
      ? h(
          'form',
          {
            class: 'invoice-actions',
            onsubmit: (event: Event) => {
              event.preventDefault();
              act('void', { reason: reason.value });
            },
          },
          invoice.status === 'draft'
            ? h('button', { type: 'button', class: 'primary-button', onclick: () => act('issue', {}) }, 'Issue')
            : null,
          h('label', { class: 'field' }, h('span', { class: 'label' }, 'Reason to void'), reason),
          h('button', { type: 'submit', class: 'secondary-button' }, 'Void'),
        )
      : null;
  fill(
    slot,
    h(
      'h3',
      { id: 'invoice-title', tabindex: -1 },
      `${invoice.kind === 'credit' ? 'Credit note' : 'Invoice'} ${invoice.number ?? '(draft)'}`,
    ),
    h(
      'p',
      { class: 'invoice-facts' },
      `Period ${invoice.periodStart} to ${invoice.periodEnd} · ${invoice.status}`,
      invoice.issueDate ? ` · issued ${invoice.issueDate}, due ${invoice.dueDate}` : '',
      invoice.voidReason ? ` · void: ${invoice.voidReason}` : '',
    ),
    table(
      'Lines',
      ['Description', 'Quantity', 'Unit price', 'Amount', 'Tax', 'Total'],
      invoice.lines.map((line) => [
        line.description,
        `${line.quantity} ${line.unit}${line.quantity === '1' ? '' : 's'}`,
        line.unitPrice,
        line.amount,
        line.tax,
        line.total,
      ]),
    ),
    h(
      'p',
      { class: 'invoice-totals' },
      `Subtotal ${money(invoice.subtotal, invoice.currency)} · Tax ${money(invoice.tax, invoice.currency)} · `,
      h('strong', {}, `Total ${money(invoice.total, invoice.currency)}`),
    ),
    h(
      'div',
      { class: 'invoice-downloads' },
      downloadButton(api, 'PDF', file('pdf'), status),
      downloadButton(api, 'CSV', file('csv'), status),
      downloadButton(
        api,
        'Usage statement CSV',
        () => ({ path: `/invoices/${id}/usage-statement`, params: new URLSearchParams({ format: 'csv' }) }),
        status,
      ),
      status,
    ),
    actions,
    h('h3', {}, 'Usage statement'),
    h(
      'p',
      { class: 'statement-facts' },
      `${statement.deviceDays} device-days over ${statement.billableDays} of ${statement.periodDays} days (${statement.timezone})`,
      statement.chainHead ? ` · audit chain head seq ${statement.chainHead.seq}` : '',
    ),
    table(
      'Devices and the days they counted',
      ['Hostname', 'Role', 'First day', 'Last day', 'Days'],
      statement.devices.map((d) => [d.hostname, d.role, d.firstDay ?? '', d.lastDay ?? '', String(d.days)]),
    ),
  );
  slot.querySelector<HTMLElement>('#invoice-title')?.focus();
}

async function render({ api, main, fail }: PageContext) {
  const organizations = await reachableOrganizations<Organization>(api, main);
  if (!organizations) return;
  const address = new URLSearchParams(location.search);
  const chosen = organizations.find((o) => o.id === address.get('org')) ?? organizations[0]!;
  const orgSelect = organizationSelect(organizations, chosen.id);
  const statusSelect = h(
    'select',
    { id: 'status', name: 'status' },
    h('option', { value: '' }, 'Any'),
    statuses.map((s) => h('option', { value: s, selected: s === address.get('status') }, s)),
  );
  const contracts = h('div', { class: 'slot', id: 'contracts' });
  const invoices = h('div', { class: 'slot', id: 'invoices' });
  const detail = h('div', { class: 'slot', id: 'invoice', 'aria-live': 'polite' });
  let openId = address.get('invoice');

  const remember = () => {
    const query = new URLSearchParams({ org: orgSelect.value });
    if (statusSelect.value) query.set('status', statusSelect.value);
    if (openId) query.set('invoice', openId);
    history.replaceState(null, '', `?${query}`);
  };
  const open = (id: string) => {
    openId = id;
    remember();
    showInvoice(api, detail, id, refresh, fail).catch(fail);
  };
  const listInvoices = () => showInvoices(api, invoices, orgSelect.value, statusSelect.value, open).catch(fail);
  function refresh() {
    listInvoices();
    showContracts(api, contracts, orgSelect.value).catch(fail);
    if (openId) open(openId);
  }
  orgSelect.addEventListener('change', () => {
    openId = null;
    fill(detail);
    remember();
    refresh();
  });
  statusSelect.addEventListener('change', () => {
    remember();
    listInvoices();
  });

  fill(
    main,
    h(
      'div',
      { class: 'invoices-page' },
      h(
        'form',
        { class: 'filters migration-filters', onsubmit: (event: Event) => event.preventDefault() },
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Organization'), orgSelect),
        h('label', { class: 'field' }, h('span', { class: 'label' }, 'Invoice status'), statusSelect),
      ),
      titledPanel('contracts-title', 'Contracts', contracts),
      titledPanel('invoices-title', 'Invoices', invoices),
      titledPanel('invoice-heading', 'Invoice', detail),
    ),
  );
  remember();
  refresh();
}

startPage('invoices.html', render);
